// EdDSA access tokens of the identity service, checked locally with jose: the signature by a known
// `kid`, typ, iss, aud, time and claim shapes. Keys come from a lookup: the identity service passes
// its own store, guards pass `createBusKeySource` (the JWKS over `qry.identity.jwks`, cached). A key
// that leaves the JWKS is refused from then on, for cached tokens too (each hit asks for its key again).
import { errors as joseErrors, importJWK, jwtVerify, type CryptoKey, type JWTPayload } from 'jose';
import type { Bus } from '../bus/bus';
import type { IdentityPublicJwk } from '../bus/identity-shapes';
import { isAppError } from '../errors';
import { errorFields, systemClock, type Clock, type Logger } from '../runtime';
import { identityUnavailable, unauthenticated } from './denials';
import { ACCESS_TOKEN_AUDIENCE, ACCESS_TOKEN_ISSUER, ACCESS_TOKEN_MAX_TTL_S, ACCESS_TOKEN_TYPE } from './policies';

/** Who a token stands for, once its session is known to be live. */
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

/** Finds the public key for a `kid`; undefined when unknown even after a refresh. */
export type KeyLookup = (kid: string) => Promise<CryptoKey | undefined>;

/** The token of an `Authorization: Bearer <jwt>` header value; anything else is 401 unauthenticated. */
export function bearerTokenOf(header: string | null): string {
  if (!header) throw unauthenticated();
  const m = /^Bearer ([A-Za-z0-9_.-]+)$/i.exec(header);
  if (!m || m[1]!.length > 8192) throw unauthenticated('The Authorization header is not a Bearer token');
  return m[1]!;
}

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

export function createAccessTokenVerifier(opts: {
  keyFor: KeyLookup;
  clockToleranceS?: number;
  clock?: Clock;
  /** Tokens already verified, kept until they expire (EdDSA verification is ~100 us; a hit ~1 us). 0 disables. */
  cacheSize?: number;
}) {
  const tolerance = opts.clockToleranceS ?? 5;
  const clock = opts.clock ?? systemClock;
  const cacheSize = opts.cacheSize ?? 10_000;
  const verified = new Map<string, AccessClaims>();

  return async function verify(token: string): Promise<AccessClaims> {
    const hit = verified.get(token);
    if (hit) {
      // Expiry is still checked on every hit.
      if (hit.expiresAt + tolerance <= clock.now() / 1000) {
        verified.delete(token);
        throw unauthenticated('The access token has expired');
      }
      // So is its key (a map look-up while the keys are fresh): a retired key's tokens stop at once,
      // not when they expire.
      if (await opts.keyFor(hit.kid)) return hit;
      verified.delete(token);
      throw unauthenticated('The token names no known key');
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
          currentDate: new Date(clock.now()),
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
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > ACCESS_TOKEN_MAX_TTL_S || iat > clock.now() / 1000 + tolerance) {
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
 * Keys from `qry.identity.jwks`, cached and re-read after `maxAgeMs`. An unknown kid (a key rotated
 * in since the last read) triggers a refresh; refreshes are at least `minRefreshMs` apart, and a
 * request that arrives inside that gap waits for the next one rather than being refused.
 * A kid that leaves the set, on a re-read or when identity says so (`evt.identity.keysChanged`), is
 * retired: dropped at once and refused without a refresh (a kid is the key's thumbprint, so a retired
 * kid never names another key; it is taken back only if identity publishes it again).
 */
export function createBusKeySource(bus: Bus, opts: { minRefreshMs?: number; maxAgeMs?: number; clock?: Clock; log?: Logger } = {}): KeyLookup {
  const minRefreshMs = opts.minRefreshMs ?? 1000;
  const maxAgeMs = opts.maxAgeMs ?? 5 * 60_000;
  const clock = opts.clock ?? systemClock;
  let keys = new Map<string, CryptoKey>();
  let loadedAt = -Infinity;
  let lastAttempt = -Infinity;
  let inflight: Promise<void> | undefined;
  const retired = new Set<string>();

  /** Keeps only `kids` of the keys held; the others are retired. */
  const retireAllBut = (kids: ReadonlySet<string>) => {
    for (const kid of keys.keys()) {
      if (!kids.has(kid)) {
        keys.delete(kid);
        retired.add(kid);
      }
    }
    for (const kid of kids) retired.delete(kid);
  };

  bus.subscribe('evt.identity.keysChanged', (event) => {
    if (!Array.isArray(event?.kids)) return;
    const kids = new Set(event.kids.filter((k): k is string => typeof k === 'string'));
    retireAllBut(kids);
    // A kid not held yet is read on first sight, as before.
  });

  const refresh = () =>
    (inflight ??= (async () => {
      lastAttempt = clock.now();
      try {
        const reply = await bus.request('qry.identity.jwks', {}, { timeoutMs: 2000 });
        const next = await importJwks(reply.keys);
        retireAllBut(new Set(next.keys()));
        keys = next;
        loadedAt = clock.now();
      } catch (e) {
        // Keep the keys we had: tokens they verify keep working while identity is away.
        opts.log?.warn('jwks refresh failed', errorFields(e));
        if (keys.size === 0) throw identityUnavailable();
      } finally {
        inflight = undefined;
      }
    })());

  return async (kid) => {
    if (retired.has(kid) && clock.now() - loadedAt <= maxAgeMs) return undefined;
    if (clock.now() - loadedAt > maxAgeMs && clock.now() - lastAttempt >= minRefreshMs) await refresh();
    const key = keys.get(kid);
    if (key) return key;
    const asked = clock.now();
    const wait = lastAttempt + minRefreshMs - asked;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (lastAttempt < asked) await refresh();
    return keys.get(kid);
  };
}
