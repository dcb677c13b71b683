// The credentials identity hands out: API keys and refresh tokens (opaque, high-entropy, stored
// only as SHA-256) and EdDSA access tokens (JWT with the claims of CONTRACT.md).
import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, type CryptoKey } from 'jose';
import { ACCESS_TOKEN_AUDIENCE, ACCESS_TOKEN_ISSUER, ACCESS_TOKEN_TYPE } from '../../platform/auth/policies';

export const API_KEY_PREFIX = 'keel_ak_';
export const REFRESH_TOKEN_PREFIX = 'keel_rt_';
/** 32 random bytes in base64url. */
const SECRET_BODY = /^[A-Za-z0-9_-]{43}$/;

/** A new secret: prefix + 256 random bits. The prefix lets secret scanners recognise leaked keys. */
export const newSecret = (prefix: string) => prefix + randomBytes(32).toString('base64url');

/** True when `value` has the shape of a secret with this prefix (checked before any lookup). */
export const isSecretShaped = (value: string, prefix: string) => value.startsWith(prefix) && SECRET_BODY.test(value.slice(prefix.length));

/** SHA-256 is enough for 256-bit random secrets: there is nothing to brute-force, so no slow hash is needed. */
export const hashSecret = (value: string) => createHash('sha256').update(value).digest('hex');

/** Shown in listings so keys can be told apart: the prefix and 4 characters. */
export const secretHint = (value: string, prefix: string) => value.slice(0, prefix.length + 4);

export interface AccessTokenInput {
  sub: string;
  sid: string;
  policies: string[];
  /** Unix seconds. */
  iat: number;
  exp: number;
}

export function signAccessToken(key: { kid: string; privateKey: CryptoKey }, c: AccessTokenInput): Promise<string> {
  return new SignJWT({ sid: c.sid, policies: c.policies })
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: ACCESS_TOKEN_TYPE })
    .setSubject(c.sub)
    .setIssuer(ACCESS_TOKEN_ISSUER)
    .setAudience(ACCESS_TOKEN_AUDIENCE)
    .setIssuedAt(c.iat)
    .setExpirationTime(c.exp)
    .sign(key.privateKey);
}
