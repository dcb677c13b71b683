// The Bearer guard of the media services as an Elysia plugin: an access token checked locally
// (auth/access-token.ts), then its live session (auth/session-check.ts), then the route's policy and
// rate budget. The rules live in platform/auth/; this file only wires them into routes.
//
// Usage (one guard per service app, created once in the service's composition root):
//
//   const guard = bearerGuard({ service: 'catalog', bus, clock, log, limits: { scan: cfg.scanBudget } });
//   createServiceApp({ ... })                 // renders the guard's AppErrors as problem+json
//     .use(guard)
//     .post('/scan', ({ body, principal }) => scan(principal.actorId, body), {
//       policy: 'resource:asset:scan',   // 401 unauthenticated | 401 reauth-required | 403 forbidden
//       rateLimit: 'scan',                // 429 rate-limited with Retry-After (a name from `limits`)
//       response: { 200: ScanResult },
//     })
//
// Put `policy` before `rateLimit` in the options: macros run in key order (authentication is
// shared either way). Keys come over the bus (`qry.identity.jwks`), sessions are checked over it
// (`qry.identity.session`, cached `liveCacheMs`); a bus failure is 503 identity-unavailable.
import { Elysia } from 'elysia';
import { bearerTokenOf, createAccessTokenVerifier, createBusKeySource, type Principal } from '../auth/access-token';
import { forbidden } from '../auth/denials';
import type { Policy } from '../auth/policies';
import { createSessionCheck, livePrincipal } from '../auth/session-check';
import type { Bus } from '../bus/bus';
import { createLogger, systemClock, type Clock, type Logger } from '../runtime';
import { createTokenBucket, rateLimited, type BucketSpec } from './rate-limit';

/** The codes of a guarded route's `operation(id, codes)` (plus `rate-limited` where it has a `rateLimit`). */
export const GUARD_CODES = ['unauthenticated', 'reauth-required', 'forbidden', 'identity-unavailable'] as const;

export interface RateLimitSpec {
  /** Token bucket per actor. */
  perActor: BucketSpec;
  /** One bucket for the whole service instance, on top of the per-actor ones. */
  service?: BucketSpec;
}

export interface BearerGuardOptions {
  /** The service the guard belongs to: the plugin's seed, so one app deduplicates its one guard. */
  service: string;
  bus: Bus;
  clock?: Clock;
  log?: Logger;
  /** Named budgets for the `rateLimit` route option; each service passes its own. */
  limits?: Record<string, RateLimitSpec>;
  /** How long a live-check answer is reused (ms). Default 2000. */
  liveCacheMs?: number;
  liveCacheSize?: number;
  clockToleranceS?: number;
  /** Verified tokens remembered until their expiry (bounded); 0 verifies the signature on every request. */
  verifiedCacheSize?: number;
  jwksMinRefreshMs?: number;
  jwksMaxAgeMs?: number;
}

export function bearerGuard(opts: BearerGuardOptions) {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger({ component: 'bearer-guard' });
  const keyFor = createBusKeySource(opts.bus, { minRefreshMs: opts.jwksMinRefreshMs, maxAgeMs: opts.jwksMaxAgeMs, clock, log });
  const verify = createAccessTokenVerifier({ keyFor, clockToleranceS: opts.clockToleranceS, clock, cacheSize: opts.verifiedCacheSize });
  const checkSession = createSessionCheck(opts.bus, { ttlMs: opts.liveCacheMs, maxEntries: opts.liveCacheSize, clock });
  const buckets = new Map(
    Object.entries(opts.limits ?? {}).map(([name, spec]) => [
      name,
      { perActor: createTokenBucket(spec.perActor, clock), service: spec.service ? createTokenBucket(spec.service, clock) : undefined },
    ]),
  );

  // One authentication per request, whichever macro asks first.
  const done = new WeakMap<Request, Promise<Principal>>();
  const authenticate = (request: Request): Promise<Principal> => {
    let p = done.get(request);
    if (!p) {
      p = (async () => {
        const claims = await verify(bearerTokenOf(request.headers.get('authorization')));
        return livePrincipal(claims, await checkSession(claims.sessionId, claims.actorId));
      })();
      done.set(request, p);
    }
    return p;
  };

  return new Elysia({ name: 'platform.bearer-guard', seed: opts.service }).macro({
    /** Requires a live session whose token holds `policy`; resolves `principal`. */
    policy: (policy: Policy) => ({
      async resolve({ request }) {
        const principal = await authenticate(request);
        if (!principal.policies.includes(policy)) throw forbidden();
        return { principal };
      },
    }),
    /** Takes one token from the actor's bucket and the service's bucket of the named budget. */
    rateLimit: (name: string) => {
      const b = buckets.get(name);
      if (!b) throw new Error(`bearerGuard: no rate limit named ${name}`);
      return {
        async resolve({ request, set }) {
          const principal = await authenticate(request);
          const mine = b.perActor.take(principal.actorId);
          set.headers['x-ratelimit-limit'] = String(mine.limit);
          set.headers['x-ratelimit-remaining'] = String(mine.remaining);
          if (!mine.allowed) throw rateLimited(mine.retryAfter, mine.limit);
          const all = b.service?.take('service');
          if (all && !all.allowed) {
            b.perActor.refund(principal.actorId);
            log.warn('service rate budget exhausted', { limit: name });
            throw rateLimited(all.retryAfter, all.limit);
          }
          return {};
        },
      };
    },
  });
}

/** The plugin's type, for route modules that `.use()` the one instance their service created. */
export type BearerGuard = ReturnType<typeof bearerGuard>;
