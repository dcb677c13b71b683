/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The three services as the media web app calls them: identity (sign in with an API key), the
// catalog (works, assets, relations, library scans) and playback (this origin: sessions). The access
// token lives in this tab's session storage only; errors are RFC 9457 problems made readable.
import { request } from '../../../../platform/browser/request';

const TOKEN_KEY = 'keel.media.token';
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (t: string) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ProblemError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

let urls: { catalogUrl: string; identityUrl: string } | undefined;
/** Where the catalog and identity are, as the playback service tells this page. */
export async function services() {
  return (urls ??= (await (await request('/app/config.json', {})).json()) as { catalogUrl: string; identityUrl: string });
}

let onUnauthorized: (message: string) => void = () => {};
export const setUnauthorizedHandler = (f: (message: string) => void) => (onUnauthorized = f);

/** The error of an answer; a 401 to a call that carried the token means it expired or was revoked. */
async function problem(res: Response, sentToken: boolean): Promise<ProblemError> {
  let code = `HTTP_${res.status}`;
  let message = `the server answered ${res.status}`;
  try {
    const p = (await res.json()) as { code?: string; title?: string; detail?: string };
    code = p.code ?? code;
    message = p.detail ?? p.title ?? message;
  } catch {}
  if (res.status === 401 && sentToken) onUnauthorized(message);
  return new ProblemError(res.status, code, message);
}

/** A JSON call to `service` ('' is this origin: playback). */
export async function call<T>(service: 'catalog' | 'identity' | '', method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const s = await services();
  const base = service === 'catalog' ? s.catalogUrl : service === 'identity' ? s.identityUrl : '';
  const headers = new Headers();
  const t = token.get();
  if (t && !(service === 'identity' && path === '/sessions')) headers.set('authorization', `Bearer ${t}`);
  if (body !== undefined) headers.set('content-type', 'application/json');
  const res = await request(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  if (!res.ok) throw await problem(res, headers.has('authorization'));
  return (await res.json()) as T;
}

export const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));
