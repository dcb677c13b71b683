// Sends one signed request and reports what happened; nothing about retries or state (dispatcher.ts).
// The request goes through the platform's pinned fetch (platform/net/pinned-fetch.ts): the target's
// name is resolved once, every address checked against the policy, and the socket dialled to exactly
// those addresses, so a DNS answer that changes between the check and the connection (rebinding)
// cannot reach a refused address; redirects are never followed.
// A per-attempt time limit covers connecting, the answer and the capped read of its body.
import { TargetRefused, type TargetPolicy, type Resolver } from '../../../platform/net/address-policy';
import { createPinnedFetch } from '../../../platform/net/pinned-fetch';

export type { Resolver } from '../../../platform/net/address-policy';

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
  const pinnedFetch = createPinnedFetch({ policy: opts.policy, resolve: opts.resolve });

  /** What a failed attempt reports (never the URL or the address). */
  function failure(e: unknown, signal: AbortSignal): { kind: SendErrorKind; message: string } {
    if (e instanceof TargetRefused) {
      if (e.refusal === 'unresolved') return { kind: 'dns', message: "the target's name did not resolve" };
      return { kind: 'refused', message: `target address refused: ${e.message}` };
    }
    if (signal.aborted) return { kind: 'timeout', message: `no complete answer within ${opts.timeoutMs} ms` };
    const err = e as Error & { code?: string };
    return { kind: 'network', message: `the request failed (${err.code ?? err.message})` };
  }

  async function send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
    const signal = AbortSignal.timeout(opts.timeoutMs);
    let res: Response;
    try {
      res = await pinnedFetch(req.url, { method: 'POST', headers: req.headers, body: req.body, signal, redirect: 'manual' });
    } catch (e) {
      return done({ status: null, retryAfter: null, bodySnippet: '', error: failure(e, signal) });
    }
    // The body is read up to maxBytes; the rest of a large body is not waited for.
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body?.getReader();
    try {
      while (reader && size < maxBytes) {
        const { done: end, value } = await reader.read();
        if (end) break;
        chunks.push(value);
        size += value.byteLength;
      }
    } catch (e) {
      // The answer came: it counts unless the time ran out before its body was read.
      if (signal.aborted) return done({ status: null, retryAfter: null, bodySnippet: '', error: failure(e, signal) });
    } finally {
      await reader?.cancel().catch(() => {});
    }
    return done({
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      bodySnippet: Buffer.concat(chunks).subarray(0, RESPONSE_SNIPPET_BYTES).toString('utf8'),
      error: null,
    });
  }

  return {
    send,
    close: () => pinnedFetch.close(),
  };
}

export type Deliverer = ReturnType<typeof createDeliverer>;
