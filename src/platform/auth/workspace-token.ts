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
export function verifyHs256(token: string, secret: string, nowMs = systemClock.now()): WorkspaceClaims {
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
  if (claims.exp <= now - CLOCK_LEEWAY_S) throw new TokenError('token expired');
  if (claims.nbf !== undefined && (!isNum(claims.nbf) || claims.nbf > now + CLOCK_LEEWAY_S)) throw new TokenError('token not yet valid');
  if (claims.iat !== undefined && (!isNum(claims.iat) || claims.iat > now + CLOCK_LEEWAY_S)) throw new TokenError('token issued in the future');
  return {
    sub: claims.sub,
    exp: claims.exp,
    iat: claims.iat as number | undefined,
    nbf: claims.nbf as number | undefined,
    role: claims.role === 'admin' ? 'admin' : undefined,
  };
}
