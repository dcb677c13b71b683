// The one way Keel sends an HTTP request to a URL a caller gave (webhook deliveries, a session's MCP
// servers): the name is resolved once, every address is checked by the address policy, and the socket
// is dialled to exactly those checked addresses (node:http's `lookup` hook), keeping the name for the
// Host header and TLS (SNI and the certificate check). A DNS answer that changes between the check and
// the connection (rebinding) therefore cannot move it. A redirect is never followed (it could lead
// anywhere, and would carry the caller's headers there): the 3xx answer is returned as it came.
// Repo clones are pinned the same way by git's own resolve list (workspaces/clones/repo-clone.ts).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { resolveAllowed, type Resolver, type TargetPolicy } from './address-policy';

export interface PinnedFetchOptions {
  policy: TargetPolicy;
  /** Name resolution (the system resolver by default); a test passes its own. */
  resolve?: Resolver;
  /** Certificates trusted for https instead of the system's (a private CA; a test's own). */
  ca?: string | string[];
}

/**
 * fetch's signature. Rejects with TargetRefused (address-policy.ts) when the host is refused or does
 * not resolve, with the signal's reason when aborted, and with the socket's error (its `code`) otherwise.
 */
export type PinnedFetch = ((input: string | URL | Request, init?: RequestInit) => Promise<Response>) & {
  /** Closes the kept-alive connections. */
  close(): void;
};

/** The URL's host as an address or name to resolve: brackets off an IPv6 literal, a trailing dot off a name. */
export function hostOf(url: URL): string {
  const h = url.hostname;
  if (h.startsWith('[')) return h.slice(1, -1);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** The port a URL's connection goes to. */
export const portOf = (url: URL): number => (url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80);

/** Statuses whose answer has no body. */
const NO_BODY = new Set([204, 205, 304]);

export function createPinnedFetch(opts: PinnedFetchOptions): PinnedFetch {
  // Keep-alive pools: a busy target is not re-dialled for every request. The lookup hook runs on every
  // new socket, so a pooled socket was dialled to a checked address too.
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 64, ...(opts.ca ? { ca: opts.ca } : {}) }),
  };

  async function pinnedFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    const source = input instanceof Request ? input : undefined;
    const url = new URL(source ? source.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('only http:// and https:// URLs are fetched');
    const signal = init.signal ?? source?.signal ?? undefined;
    signal?.throwIfAborted();
    const method = (init.method ?? source?.method ?? 'GET').toUpperCase();
    const headers = new Headers(source?.headers);
    new Headers(init.headers).forEach((v, k) => headers.set(k, v));
    // node:http does not decode a compressed answer as fetch does: ask for none.
    if (!headers.has('accept-encoding')) headers.set('accept-encoding', 'identity');
    const rawBody = init.body ?? source?.body ?? null;
    let body: Buffer | undefined;
    if (rawBody !== null && method !== 'GET' && method !== 'HEAD') {
      const wrapped = new Response(rawBody);
      body = Buffer.from(await wrapped.arrayBuffer());
      const type = wrapped.headers.get('content-type');
      if (type && !headers.has('content-type')) headers.set('content-type', type);
      headers.set('content-length', String(body.length));
    }

    const host = hostOf(url);
    const checked = (await resolveAllowed(host, opts.policy, opts.resolve, portOf(url))).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    signal?.throwIfAborted();
    const pinned: LookupFunction = (_name, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: typeof checked) => void)(null, checked);
      else callback(null, checked[0]!.address, checked[0]!.family);
    };

    const client = url.protocol === 'https:' ? https : http;
    return await new Promise<Response>((settle, fail) => {
      const request = client.request({
        protocol: url.protocol,
        hostname: host,
        port: url.port || undefined,
        path: url.pathname + url.search,
        method,
        headers: Object.fromEntries(headers),
        agent: agents[url.protocol as 'http:' | 'https:'],
        lookup: pinned,
        // The certificate is checked against the name, not the address dialled.
        ...(url.protocol === 'https:' && !/^[\d.]+$|:/.test(host) ? { servername: host } : {}),
        ...(url.username ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
      });
      const onAbort = () => request.destroy(signal!.reason instanceof Error ? signal!.reason : new DOMException('aborted', 'AbortError'));
      signal?.addEventListener('abort', onAbort, { once: true });
      request.on('error', (e) => {
        signal?.removeEventListener('abort', onAbort);
        fail(signal?.aborted ? signal.reason : e);
      });
      request.on('response', (res) => {
        const status = res.statusCode ?? 502;
        if (status >= 300 && status < 400 && res.headers.location && init.redirect === 'error') {
          res.destroy();
          signal?.removeEventListener('abort', onAbort);
          return fail(new TypeError('the server answered with a redirect, which is not followed'));
        }
        const answer = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) answer.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const done = () => signal?.removeEventListener('abort', onAbort);
        if (method === 'HEAD' || NO_BODY.has(status)) {
          res.resume();
          res.on('end', done);
          return settle(new Response(null, { status, statusText: res.statusMessage, headers: answer }));
        }
        // The body streams as it arrives (an SSE answer stays open), read no faster than it is consumed.
        let closed = false;
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            res.on('data', (chunk: Buffer) => {
              if (closed) return;
              controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
              if ((controller.desiredSize ?? 1) <= 0) res.pause();
            });
            res.on('end', () => {
              done();
              if (!closed) (closed = true), controller.close();
            });
            const broken = (e?: Error) => {
              done();
              if (!closed) (closed = true), controller.error(signal?.aborted ? signal.reason : (e ?? new Error('the connection closed before the answer ended')));
            };
            res.on('error', broken);
            res.on('aborted', () => broken());
          },
          pull() {
            res.resume();
          },
          cancel() {
            closed = true;
            done();
            res.destroy();
          },
        });
        settle(new Response(stream, { status, statusText: res.statusMessage, headers: answer }));
      });
      request.end(body);
    });
  }

  return Object.assign(pinnedFetch, {
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  });
}
