// Sends one signed request and reports what happened; nothing about retries or state (outbox.ts).
// The target's name is resolved here, every address is checked against the policy, and the socket
// is dialled to exactly those checked addresses (node:http's `lookup` hook), so a DNS answer that
// changes between the check and the connection (rebinding) cannot reach a refused address.
// A per-attempt time limit covers connecting, the answer and the capped read of its body;
// redirects are never followed (node:http does not follow them).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { resolveAllowed, TargetRefused, type Resolver, type TargetPolicy } from '../../../platform/net/address-policy';
import { hostOf, portOf } from './target-policy';

export type { Resolver } from '../../../platform/net/address-policy';

interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type SendErrorKind = 'refused' | 'dns' | 'timeout' | 'network';

export interface SendResult {
  /** HTTP status, or null when no answer came. */
  status: number | null;
  /** The receiver's Retry-After header, when it sent one. */
  retryAfter: string | null;
  /** The first bytes of the answer's body (for the delivery log). */
  bodySnippet: string;
  durationMs: number;
  error: { kind: SendErrorKind; message: string } | null;
}

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface DelivererOptions {
  policy: TargetPolicy;
  timeoutMs: number;
  resolve?: Resolver;
  /** Bytes of the answer read at most (the rest is dropped with the connection). */
  maxResponseBytes?: number;
}

export const RESPONSE_SNIPPET_BYTES = 1024;

export function createDeliverer(opts: DelivererOptions) {
  const maxBytes = opts.maxResponseBytes ?? 64 * 1024;
  // Keep-alive pools per protocol: a busy receiver is not re-dialled for every delivery. The lookup hook
  // runs on every new socket, so a pooled socket was dialled to a checked address too.
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };

  /** The addresses `host` may be dialled at (every one checked by the platform's policy), or why not. */
  async function checkedAddresses(host: string, port: number): Promise<ResolvedAddress[] | { kind: SendErrorKind; message: string }> {
    try {
      const found = await resolveAllowed(host, opts.policy, opts.resolve, port);
      return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    } catch (e) {
      if (!(e instanceof TargetRefused)) throw e;
      if (e.refusal === 'unresolved') return { kind: 'dns', message: "the target's name did not resolve" };
      return { kind: 'refused', message: `target address refused: ${e.message}` };
    }
  }

  async function send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
    const url = new URL(req.url);
    const checked = await checkedAddresses(hostOf(url), portOf(url));
    if (!Array.isArray(checked)) return done({ status: null, retryAfter: null, bodySnippet: '', error: checked });
    const pinned: LookupFunction = (_host, options, callback) => {
      const all = (options as { all?: boolean }).all;
      if (all) (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, checked);
      else callback(null, checked[0]!.address, checked[0]!.family);
    };
    const client = url.protocol === 'https:' ? https : http;
    return await new Promise<SendResult>((settle) => {
      let finished = false;
      const finish = (r: Omit<SendResult, 'durationMs'>) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        settle(done(r));
      };
      const request = client.request(
        {
          protocol: url.protocol,
          hostname: hostOf(url),
          port: url.port || undefined,
          path: url.pathname + url.search,
          method: 'POST',
          headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
          agent: agents[url.protocol as 'http:' | 'https:'],
          lookup: pinned,
          ...(url.username ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const answer = () => ({
            status: res.statusCode ?? null,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            bodySnippet: Buffer.concat(chunks).subarray(0, RESPONSE_SNIPPET_BYTES).toString('utf8'),
            error: null,
          });
          res.on('data', (c: Buffer) => {
            if (size >= maxBytes) return;
            chunks.push(c);
            size += c.length;
            if (size >= maxBytes) {
              // Enough read: the answer counts, and the rest of a large body is not waited for.
              finish(answer());
              res.destroy();
            }
          });
          res.on('end', () => finish(answer()));
          res.on('error', () => finish(answer()));
        },
      );
      const timer = setTimeout(() => {
        finish({ status: null, retryAfter: null, bodySnippet: '', error: { kind: 'timeout', message: `no complete answer within ${opts.timeoutMs} ms` } });
        request.destroy();
      }, opts.timeoutMs);
      request.on('error', (e: Error & { code?: string }) =>
        finish({ status: null, retryAfter: null, bodySnippet: '', error: { kind: 'network', message: `the request failed (${e.code ?? e.message})` } }),
      );
      request.end(req.body);
    });
  }

  return {
    send,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

export type Deliverer = ReturnType<typeof createDeliverer>;
