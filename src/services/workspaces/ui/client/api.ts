/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// The workspace API as the dashboard calls it: the token from the tab's session storage on every
// request, errors in the API's envelope turned into readable messages, and event streams read
// with fetch (not EventSource: it cannot send an Authorization header, and a token in the URL
// would land in server logs, browser history and Referer headers) by the SDK's one SSE reader.

import { readEvents } from '../../../../../clients/typescript/src/sse';
import { request } from '../../../../platform/browser/request';

const TOKEN_KEY = 'keel.token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (t: string) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Called when the API refuses the token (expired, revoked): the app goes back to sign-in. */
let onUnauthorized: (message: string) => void = () => {};
export const setUnauthorizedHandler = (f: (message: string) => void) => (onUnauthorized = f);

/** The tab's Authorization header, for requests the JSON helper below does not make (bytes, uploads). */
export const authorized = (extra?: HeadersInit) => headers(extra);

function headers(extra?: HeadersInit): Headers {
  const hs = new Headers(extra);
  const t = token.get();
  if (t) hs.set('authorization', `Bearer ${t}`);
  return hs;
}

async function failure(res: Response): Promise<ApiError> {
  let code = 'HTTP_' + res.status;
  let message = `the server answered ${res.status}`;
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.code) code = body.error.code;
    if (body.error?.message) message = body.error.message;
  } catch {}
  const err = new ApiError(res.status, code, message);
  if (res.status === 401) onUnauthorized(message);
  return err;
}

export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await request(path, {
    method,
    headers: headers(body === undefined ? undefined : { 'content-type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

export interface StreamEvent {
  event: string;
  id?: string;
  data: unknown;
}

/**
 * Reads an SSE response until it ends or `signal` aborts; each event goes to `onEvent`. Resolves
 * when the stream ended (normally or cut); rejects with ApiError when it could not be opened.
 */
export async function readStream(
  path: string,
  opts: { signal: AbortSignal; lastEventId?: string; body?: unknown; onOpen?: () => void; onEvent: (e: StreamEvent) => void },
): Promise<void> {
  const hs = headers({ accept: 'text/event-stream' });
  if (opts.lastEventId) hs.set('last-event-id', opts.lastEventId);
  // A body makes it a POST (a streaming command or agent message); otherwise a GET follow.
  if (opts.body !== undefined) hs.set('content-type', 'application/json');
  const res = await request(path, {
    method: opts.body === undefined ? 'GET' : 'POST',
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    headers: hs,
    signal: opts.signal,
    cache: 'no-store',
  });
  if (!res.ok || !res.body) throw await failure(res);
  opts.onOpen?.();
  try {
    for await (const e of readEvents<StreamEvent>(res)) opts.onEvent(e);
  } catch (e) {
    if (opts.signal.aborted) return;
    throw e;
  }
}

export const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));
