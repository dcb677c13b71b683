// HS256 JWTs of the workspace API (CONTRACT.md), the actor they stand for and the ownership rule.
// Written out rather than through a library so that the checks the contract lists are explicit
// and verification stays synchronous on the hot path.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock } from '../runtime';

export interface WorkspaceClaims {
  sub: string;
  exp: number;
  iat?: number;
  nbf?: number;
  role?: 'admin';
}

export const CLOCK_LEEWAY_S = 60;

/** Who calls the workspace API: the token's `sub`, and whether it carries `role: admin`. */
export interface Actor {
  id: string;
  admin: boolean;
}

/** Ownership rule: admins act on everything; others only on what they own (another's is 404). */
export const canAccess = (actor: Actor, owner: string) => actor.admin || actor.id === owner;

export const actorOf = (claims: WorkspaceClaims): Actor => ({ id: claims.sub, admin: claims.role === 'admin' });

const b64url = (buf: Buffer | string) => Buffer.from(buf).toString('base64url');

export function signHs256(claims: Record<string, unknown>, secret: string): string {
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const payload = b64url(JSON.stringify(claims));
  const sig = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${sig}`;
}

export function mintToken(
  secret: string,
  opts: { sub: string; ttlSeconds: number; role?: 'admin'; clock?: Clock },
): string {
  const iat = Math.floor((opts.clock ?? systemClock).now() / 1000);
  return signHs256({ sub: opts.sub, iat, exp: iat + opts.ttlSeconds, ...(opts.role ? { role: opts.role } : {}) }, secret);
}

export class TokenError extends Error {}

function parseJson(part: string): Record<string, unknown> {
  if (!/^[A-Za-z0-9_-]+$/.test(part)) throw new TokenError('malformed token');
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new TokenError('malformed token');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new TokenError('malformed token');
  return v as Record<string, unknown>;
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Verifies signature and claims; throws TokenError with a reason safe to show. */
export function verifyHs256(token: string, secret: string, nowMs: number): WorkspaceClaims {
  const parts = token.split('.');
  if (parts.length !== 3) throw new TokenError('malformed token');
  const [h, p, s] = parts as [string, string, string];
  const header = parseJson(h);
  // Only HS256: `none`, RS/ES/EdDSA and any key named by the token (kid, jku, jwk, x5u) are ignored or refused.
  if (header.alg !== 'HS256') throw new TokenError('unsupported token algorithm');
  if (header.crit !== undefined) throw new TokenError('unsupported token header');
  const expected = createHmac('sha256', secret).update(`${h}.${p}`).digest();
  const given = Buffer.from(s, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new TokenError('invalid token signature');
  const claims = parseJson(p);
  const now = nowMs / 1000;
  if (typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 256) throw new TokenError('token has no subject');
  if (!isNum(claims.exp)) throw new TokenError('token has no expiry');
  if (claims.nbf !== undefined && !isNum(claims.nbf)) throw new TokenError('token not yet valid');
  if (claims.iat !== undefined && !isNum(claims.iat)) throw new TokenError('token issued in the future');
  const verified: WorkspaceClaims = {
    sub: claims.sub,
    exp: claims.exp,
    iat: claims.iat as number | undefined,
    nbf: claims.nbf as number | undefined,
    role: claims.role === 'admin' ? 'admin' : undefined,
  };
  checkTimes(verified, now);
  return verified;
}

/** The claims that depend on the time: checked at verification and again on every cache hit. */
function checkTimes(claims: WorkspaceClaims, nowS: number) {
  if (claims.exp <= nowS - CLOCK_LEEWAY_S) throw new TokenError('token expired');
  if (claims.nbf !== undefined && claims.nbf > nowS + CLOCK_LEEWAY_S) throw new TokenError('token not yet valid');
  if (claims.iat !== undefined && claims.iat > nowS + CLOCK_LEEWAY_S) throw new TokenError('token issued in the future');
}

/** Tokens longer than this are verified every time rather than kept (a cache entry must stay small). */
const MAX_CACHED_TOKEN_CHARS = 2048;

/**
 * verifyHs256 behind a bounded cache of tokens that passed, keyed by the whole token (so its
 * signature: a token altered in any byte is another key, verified afresh). The secret is fixed for
 * the process, so a verdict of the signature cannot change; the time claims can, and are checked
 * again on every hit, so an expired token is refused even when it is cached (and leaves the
 * cache). Refusals are never kept: each refused token is verified again and refused again.
 * HMAC verification is ~5 us and a hit ~0.2 us, which matters on the hottest path of the API.
 */
export function createHs256Verifier(secret: string, opts: { clock?: Clock; cacheSize?: number } = {}) {
  const clock = opts.clock ?? systemClock;
  const cacheSize = opts.cacheSize ?? 10_000;
  const verified = new Map<string, WorkspaceClaims>();

  return {
    verify(token: string): WorkspaceClaims {
      const nowMs = clock.now();
      const hit = verified.get(token);
      if (hit) {
        try {
          checkTimes(hit, nowMs / 1000);
        } catch (e) {
          verified.delete(token);
          throw e;
        }
        return hit;
      }
      const claims = verifyHs256(token, secret, nowMs);
      if (cacheSize > 0 && token.length <= MAX_CACHED_TOKEN_CHARS) {
        verified.set(token, claims);
        // Insertion order is age order: drop the oldest beyond the bound.
        if (verified.size > cacheSize) verified.delete(verified.keys().next().value as string);
      }
      return claims;
    },
    size: () => verified.size,
  };
}
