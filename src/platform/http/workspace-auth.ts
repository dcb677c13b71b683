// Bearer auth and rate limits of the workspace API (CONTRACT.md): HS256 tokens keyed by
// APP_API_SECRET, 100 req/min per client address without a valid token, 1000 per `sub` with one.
// Runs on every request before parsing, so a 401 or 429 comes before any other answer. A request
// that passed both may then be answered at once by `early` (a response cache, docs/performance.md)
// before Elysia routes and validates it; that answer carries the same rate-limit headers.
import { Elysia } from 'elysia';
import { actorOf, createHs256Verifier, TokenError, type Actor } from '../auth/workspace-token';
import { systemClock, type Clock } from '../runtime';
import { createFixedWindow, type Decision } from './rate-limit';
import type { HeaderPairs } from './response-cache';
import { EnvelopeErrors } from '../platform.errors';

export interface WorkspaceAuthOptions {
  secret: string;
  anonymousLimit?: number;
  authenticatedLimit?: number;
  /** Paths under this prefix need a token; everything else is public. */
  protectedPrefix?: string;
  clock?: Clock;
  /** Plugin seed: one instance per service app, deduplicated within it (the service name). */
  seed?: string;
  /** Verified tokens kept until their expiry (platform/auth/workspace-token.ts); 0 verifies every time. */
  tokenCacheSize?: number;
  /**
   * Answers a request of an authenticated actor that passed the rate limit before routing, or
   * returns undefined to let it go on (e.g. `(req, actor, h) => lists.early(req, listScope(actor), h)`).
   * `headers` are the rate-limit headers the answer must carry.
   */
  early?: (request: Request, actor: Actor, headers: HeaderPairs) => Response | undefined | Promise<Response | undefined>;
  /** Requests under the prefix that carry their own authorisation (a WebSocket's ticket): no token needed here. */
  ownAuth?: (request: Request) => boolean;
}

/** X-RateLimit-* of a decision, as pairs (a Response takes them without an intermediate object). */
export const rateLimitHeaders = (d: Decision): HeaderPairs => [
  ['x-ratelimit-limit', String(d.limit)],
  ['x-ratelimit-remaining', String(d.remaining)],
  ['x-ratelimit-reset', String(d.resetAt)],
];

export function workspaceAuth(opts: WorkspaceAuthOptions) {
  const clock = opts.clock ?? systemClock;
  const limiter = createFixedWindow(60_000, clock);
  const anonymous = opts.anonymousLimit ?? 100;
  const authenticated = opts.authenticatedLimit ?? 1000;
  const prefix = opts.protectedPrefix ?? '/api';
  const actors = new WeakMap<Request, Actor>();
  const tokens = createHs256Verifier(opts.secret, { clock, cacheSize: opts.tokenCacheSize });
  const early = opts.early;

  return new Elysia({ name: 'platform.workspace-auth', seed: opts.seed ?? 'workspaces' })
    .onRequest(({ request, set, server }) => {
      let actor: Actor | undefined;
      let failure: string | undefined;
      const header = request.headers.get('authorization');
      if (header) {
        const m = /^Bearer ([^\s]+)$/i.exec(header);
        if (!m) failure = 'malformed Authorization header';
        else {
          try {
            actor = actorOf(tokens.verify(m[1]!));
          } catch (e) {
            failure = e instanceof TokenError ? e.message : 'invalid token';
          }
        }
      }
      const key = actor ? `sub:${actor.id}` : `ip:${server?.requestIP(request)?.address ?? 'unknown'}`;
      const d = limiter.hit(key, actor ? authenticated : anonymous);
      const onward = () => {
        set.headers['x-ratelimit-limit'] = String(d.limit);
        set.headers['x-ratelimit-remaining'] = String(d.remaining);
        set.headers['x-ratelimit-reset'] = String(d.resetAt);
        if (!d.allowed) {
          throw EnvelopeErrors.RATE_LIMITED('rate limit exceeded; retry after the window resets', { limit: d.limit, retryAfter: d.retryAfter }, { retryAfter: d.retryAfter });
        }
        if (actor) actors.set(request, actor);
        else if (new URL(request.url).pathname.startsWith(prefix) && !opts.ownAuth?.(request)) {
          throw EnvelopeErrors.UNAUTHORIZED(failure ?? 'a Bearer token is required');
        }
      };
      if (actor && d.allowed && early) {
        // Returned as is: nothing is left in `set`, so Elysia does not copy the answer to add headers.
        // (An early answer on PostgreSQL waits for the data version; on SQLite it is synchronous.)
        const answer = early(request, actor, rateLimitHeaders(d));
        if (answer instanceof Promise) return answer.then((a) => a ?? onward());
        if (answer) return answer;
      }
      return onward();
    })
    .resolve({ as: 'scoped' }, ({ request }) => {
      const actor = actors.get(request);
      if (!actor) throw EnvelopeErrors.UNAUTHORIZED('a Bearer token is required');
      return { actor };
    });
}

/** The plugin's type, for route modules that `.use()` the one instance their service created. */
export type WorkspaceAuthPlugin = ReturnType<typeof workspaceAuth>;
