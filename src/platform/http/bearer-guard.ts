// The Bearer guard of the media services: EdDSA access tokens of the identity service, checked
// locally, then against the live session on the bus, then against the route's policy and rate budget.
//
// Usage (one guard per service app, created once in the service's composition root):
//
//   const guard = bearerGuard({ bus: deps.bus, log: deps.log });
//   new Elysia()
//     .use(errorHandling('problem', { production, log }))   // renders the guard's AppErrors
//     .use(guard)
//     .post('/scan', ({ body, principal }) => scan(principal.actorId, body), {
//       policy: 'resource:asset:scan',   // 401 unauthenticated | 401 reauth-required | 403 forbidden
//       rateLimit: 'scan',                // 429 rate-limited with Retry-After (a name from `limits`)
//       response: { 200: ScanResult, ...guardResponses },
//     })
//
// - `policy` resolves `principal: { actorId, sessionId, policies }` for the handler. Put `policy`
//   before `rateLimit` in the options: macros run in key order (authentication is shared either way).
// - Ownership: a resource that carries an owner answers 404 (as if absent) when
//   `owner !== principal.actorId`; see `ownsResource`.
// - Keys: the JWKS comes over the bus (`qry.identity.jwks`), cached; an unknown `kid` refreshes it
//   (refreshes at least `jwksMinRefreshMs` apart; a request inside the gap waits for the next one),
//   and the whole set is re-read after `jwksMaxAgeMs`.
// - Verified tokens are remembered until their `exp` (bounded by `verifiedCacheSize`), so a repeat
//   request skips the ~100 us Ed25519 check; expiry is still checked on every hit.
// - Live check: `qry.identity.session`, cached per session for `liveCacheMs` (default 2 s, so a
//   revocation is refused everywhere within 2 s), at most `liveCacheSize` entries. Bus failure:
//   503 identity-unavailable (fail closed).
import { Elysia, t } from 'elysia';
import { errors as joseErrors, importJWK, jwtVerify, type CryptoKey, type JWTPayload } from 'jose';
import type { Bus } from '../bus/bus';
import type { BusQueries, IdentityPublicJwk } from '../bus/subjects';
import { AppError, isAppError } from '../errors';
import { createTokenBucket, type BucketSpec } from '../rate-limit';
import { createLogger, errorFields, type Logger } from '../runtime';

/** `iss` and `aud` of every access token; the identity service signs with these, guards demand them. */
export const ACCESS_TOKEN_ISSUER = 'keel-identity';
export const ACCESS_TOKEN_AUDIENCE = 'keel-media';
/** JWT `typ` header of access tokens (RFC 9068), so no other JWT signed by the same key passes. */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** CONTRACT.md: `exp` at most 15 minutes after `iat`. */
export const ACCESS_TOKEN_MAX_TTL_S = 900;

/** Every policy an actor can hold. */
export const POLICIES = [
  'resource:work:read',
  'resource:asset:read',
  'resource:asset:scan',
  'resource:source:read',
  'resource:source:write',
  'admin:identity',
] as const;
export type Policy = (typeof POLICIES)[number];

export interface Principal {
  actorId: string;
  sessionId: string;
  policies: string[];
}

export interface AccessClaims extends Principal {
  issuedAt: number;
  expiresAt: number;
  kid: string;
}

/** Ownership rule of the media services: another actor's resource is absent (404). */
export const ownsResource = (principal: Principal, owner: string) => principal.actorId === owner;

/** Problem Details shape of the media services, for `response` declarations in OpenAPI. */
export const ProblemSchema = t.Object(
  {
    type: t.String(),
    title: t.String(),
    status: t.Number(),
    code: t.String({ description: 'stable machine-readable code' }),
    retryable: t.Boolean(),
    category: t.String({ description: 'transient, permanent or recoverable' }),
    instance: t.Optional(t.String()),
    on: t.Optional(t.String({ description: 'validation: body, query, path or headers' })),
    property: t.Optional(t.String({ description: 'validation, outside production only' })),
    detail: t.Optional(t.String({ description: 'validation, outside production only' })),
  },
  { additionalProperties: true, description: 'RFC 9457 Problem Details (application/problem+json)' },
);
/** Spread into a guarded route's `response`: the denials the guard may answer. */
export const guardResponses = { 401: ProblemSchema, 403: ProblemSchema, 429: ProblemSchema, 503: ProblemSchema };

// ---- denials -------------------------------------------------------------------------------

const bearerChallenge = { 'www-authenticate': 'Bearer' };
export const unauthenticated = (message = 'A valid Bearer access token is required') =>
  new AppError('unauthenticated', 401, message, { headers: bearerChallenge, category: 'recoverable' });
export const reauthRequired = (reason: string) =>
  new AppError('reauth-required', 401, 'The session has ended; create a new session with your API key', {
    details: { reason },
    headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    category: 'recoverable',
  });
export const forbidden = () => new AppError('forbidden', 403, 'The access token lacks the policy this route requires');
export const rateLimited = (retryAfter: number, limit: number) =>
  new AppError('rate-limited', 429, 'Rate limit exceeded', {
    details: { limit, retryAfter },
    headers: { 'retry-after': String(retryAfter) },
    retryable: true,
    category: 'transient',
  });
const identityUnavailable = () =>
  new AppError('identity-unavailable', 503, 'The identity service did not answer; retry shortly', {
    retryable: true,
    category: 'transient',
    headers: { 'retry-after': '1' },
  });

// ---- local verification ---------------------------------------------------------------------

/** Finds the public key for a `kid`; undefined when unknown even after a refresh. */
export type KeyLookup = (kid: string) => Promise<CryptoKey | undefined>;

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** Local checks of an access token: EdDSA signature by a known `kid`, typ, iss, aud, time, claim shapes. */
export function createAccessTokenVerifier(opts: {
  keyFor: KeyLookup;
  clockToleranceS?: number;
  now?: () => number;
  /** Tokens already verified, kept until they expire (EdDSA verification is ~100 us; a hit ~1 us). 0 disables. */
  cacheSize?: number;
}) {
  const tolerance = opts.clockToleranceS ?? 5;
  const now = opts.now ?? Date.now;
  const cacheSize = opts.cacheSize ?? 10_000;
  const verified = new Map<string, AccessClaims>();

  return async function verify(token: string): Promise<AccessClaims> {
    const hit = verified.get(token);
    if (hit) {
      if (hit.expiresAt + tolerance > now() / 1000) return hit;
      verified.delete(token);
      throw unauthenticated('The access token has expired');
    }
    const claims = await verifyUncached(token);
    if (cacheSize > 0) {
      verified.set(token, claims);
      // Insertion order is age order: drop the oldest beyond the bound.
      if (verified.size > cacheSize) verified.delete(verified.keys().next().value as string);
    }
    return claims;
  };

  async function verifyUncached(token: string): Promise<AccessClaims> {
    let payload: JWTPayload;
    let kid: string;
    try {
      const res = await jwtVerify(
        token,
        async (header) => {
          if (typeof header.kid !== 'string' || header.kid.length === 0 || header.kid.length > 128) throw unauthenticated('The token names no known key');
          const key = await opts.keyFor(header.kid);
          if (!key) throw unauthenticated('The token names no known key');
          return key;
        },
        {
          algorithms: ['EdDSA'],
          issuer: ACCESS_TOKEN_ISSUER,
          audience: ACCESS_TOKEN_AUDIENCE,
          typ: ACCESS_TOKEN_TYPE,
          requiredClaims: ['sub', 'sid', 'iat', 'exp'],
          clockTolerance: tolerance,
          currentDate: new Date(now()),
        },
      );
      payload = res.payload;
      kid = res.protectedHeader.kid as string;
    } catch (e) {
      if (isAppError(e)) throw e;
      if (e instanceof joseErrors.JWTExpired) throw unauthenticated('The access token has expired');
      throw unauthenticated('The access token is not acceptable');
    }
    const { sub, sid, iat, exp, policies } = payload as Record<string, unknown>;
    if (typeof sub !== 'string' || sub.length === 0 || typeof sid !== 'string' || sid.length === 0) {
      throw unauthenticated('The access token is not acceptable');
    }
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > ACCESS_TOKEN_MAX_TTL_S || iat > now() / 1000 + tolerance) {
      throw unauthenticated('The access token is not acceptable');
    }
    if (!isStringArray(policies)) throw unauthenticated('The access token is not acceptable');
    return { actorId: sub, sessionId: sid, policies, issuedAt: iat, expiresAt: exp, kid };
  }
}

/** Imports the Ed25519 public keys of a JWKS into a kid -> key map; other key types are skipped. */
export async function importJwks(keys: IdentityPublicJwk[]): Promise<Map<string, CryptoKey>> {
  const out = new Map<string, CryptoKey>();
  for (const jwk of keys) {
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.kid !== 'string') continue;
    out.set(jwk.kid, (await importJWK({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }, 'EdDSA')) as CryptoKey);
  }
  return out;
}

/**
 * Keys from `qry.identity.jwks`, cached. An unknown kid (a key rotated in since the last read)
 * triggers a refresh; refreshes are at least `minRefreshMs` apart, and a request that arrives
 * inside that gap waits for the next one rather than being refused.
 */
export function createBusKeySource(bus: Bus, opts: { minRefreshMs?: number; maxAgeMs?: number; now?: () => number; log?: Logger } = {}) {
  const minRefreshMs = opts.minRefreshMs ?? 1000;
  const maxAgeMs = opts.maxAgeMs ?? 5 * 60_000;
  const now = opts.now ?? Date.now;
  let keys = new Map<string, CryptoKey>();
  let loadedAt = -Infinity;
  let lastAttempt = -Infinity;
  let inflight: Promise<void> | undefined;

  const refresh = () =>
    (inflight ??= (async () => {
      lastAttempt = now();
      try {
        const reply = await bus.request('qry.identity.jwks', {}, { timeoutMs: 2000 });
        keys = await importJwks(reply.keys);
        loadedAt = now();
      } catch (e) {
        // Keep the keys we had: tokens they verify keep working while identity is away.
        opts.log?.warn('jwks refresh failed', errorFields(e));
        if (keys.size === 0) throw identityUnavailable();
      } finally {
        inflight = undefined;
      }
    })());

  const keyFor: KeyLookup = async (kid) => {
    if (now() - loadedAt > maxAgeMs && now() - lastAttempt >= minRefreshMs) await refresh();
    const key = keys.get(kid);
    if (key) return key;
    const asked = now();
    const wait = lastAttempt + minRefreshMs - asked;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (lastAttempt < asked) await refresh();
    return keys.get(kid);
  };
  return keyFor;
}

// ---- live session check ---------------------------------------------------------------------

type LiveReply = BusQueries['qry.identity.session']['reply'];

/** `qry.identity.session` behind a short, bounded cache; concurrent checks of one session share one request. */
export function createLiveCheck(bus: Bus, opts: { ttlMs?: number; maxEntries?: number; timeoutMs?: number; now?: () => number } = {}) {
  const ttlMs = opts.ttlMs ?? 2000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { reply: LiveReply; at: number }>();
  const inflight = new Map<string, Promise<LiveReply>>();

  return {
    async check(sid: string, sub: string): Promise<LiveReply> {
      const key = `${sub}\u0000${sid}`;
      const hit = cache.get(key);
      if (hit && now() - hit.at < ttlMs) return hit.reply;
      let p = inflight.get(key);
      if (!p) {
        p = bus
          .request('qry.identity.session', { sid, sub }, { timeoutMs: opts.timeoutMs ?? 2000 })
          .then((reply) => {
            cache.delete(key);
            cache.set(key, { reply, at: now() });
            // Insertion order is age order: drop the oldest beyond the bound.
            while (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
            return reply;
          })
          .finally(() => inflight.delete(key));
        inflight.set(key, p);
      }
      try {
        return await p;
      } catch {
        throw identityUnavailable();
      }
    },
  };
}

/**
 * The principal a verified token stands for, given the live answer for its session: a session that
 * ended is refused, and a policy withdrawn since the token was signed stops working now, not at the
 * token's expiry. One rule for the guard and the identity service's own routes.
 */
export function livePrincipal(claims: AccessClaims, state: LiveReply): Principal {
  if (!state.live) throw state.reauth ? reauthRequired(state.reason ?? 'session-ended') : unauthenticated('The session is not known');
  const policies = state.policies ? claims.policies.filter((p) => state.policies!.includes(p)) : claims.policies;
  return { actorId: claims.actorId, sessionId: claims.sessionId, policies };
}

// ---- the plugin -----------------------------------------------------------------------------

export interface RateLimitSpec {
  /** Token bucket per actor. */
  perActor: BucketSpec;
  /** One bucket for the whole service instance, on top of the per-actor ones. */
  service?: BucketSpec;
}

/** Media spec, Limits: POST /scan 5/s with a burst of 20 per actor; the service budget is ours: 50/s, burst 100. */
export const DEFAULT_RATE_LIMITS: Record<string, RateLimitSpec> = {
  scan: { perActor: { ratePerSec: 5, burst: 20 }, service: { ratePerSec: 50, burst: 100 } },
};

export interface BearerGuardOptions {
  bus: Bus;
  log?: Logger;
  /** Named budgets for the `rateLimit` route option. */
  limits?: Record<string, RateLimitSpec>;
  /** How long a live-check answer is reused (ms). Default 2000. */
  liveCacheMs?: number;
  liveCacheSize?: number;
  clockToleranceS?: number;
  /** Verified tokens remembered until their expiry (bounded); 0 verifies the signature on every request. */
  verifiedCacheSize?: number;
  jwksMinRefreshMs?: number;
  jwksMaxAgeMs?: number;
  now?: () => number;
}

let seed = 0;

/** Reads `Authorization: Bearer <jwt>`; anything else is 401 unauthenticated. */
export function bearerToken(request: Request): string {
  const header = request.headers.get('authorization');
  if (!header) throw unauthenticated();
  const m = /^Bearer ([A-Za-z0-9_.-]+)$/i.exec(header);
  if (!m || m[1]!.length > 8192) throw unauthenticated('The Authorization header is not a Bearer token');
  return m[1]!;
}

export function bearerGuard(opts: BearerGuardOptions) {
  const now = opts.now ?? Date.now;
  const log = opts.log ?? createLogger({ component: 'bearer-guard' });
  const keyFor = createBusKeySource(opts.bus, { minRefreshMs: opts.jwksMinRefreshMs, maxAgeMs: opts.jwksMaxAgeMs, now, log });
  const verify = createAccessTokenVerifier({ keyFor, clockToleranceS: opts.clockToleranceS, now, cacheSize: opts.verifiedCacheSize });
  const live = createLiveCheck(opts.bus, { ttlMs: opts.liveCacheMs, maxEntries: opts.liveCacheSize, now });
  const limits = opts.limits ?? DEFAULT_RATE_LIMITS;
  const buckets = new Map(
    Object.entries(limits).map(([name, spec]) => [
      name,
      { perActor: createTokenBucket(spec.perActor, now), service: spec.service ? createTokenBucket(spec.service, now) : undefined },
    ]),
  );

  // One authentication per request, whichever macro asks first.
  const done = new WeakMap<Request, Promise<Principal>>();
  const authenticate = (request: Request): Promise<Principal> => {
    let p = done.get(request);
    if (!p) {
      p = (async () => {
        const claims = await verify(bearerToken(request));
        return livePrincipal(claims, await live.check(claims.sessionId, claims.actorId));
      })();
      done.set(request, p);
    }
    return p;
  };

  return new Elysia({ name: 'platform.bearer-guard', seed: seed++ }).macro({
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
