// The identity service's variables, parsed once: a bad value stops start-up with `VAR: reason`.
import { ConfigError, readInt, readString, type Env } from '../../platform/config';
import { ACCESS_TOKEN_MAX_TTL_S } from '../../platform/auth/policies';

export interface IdentityConfig {
  /** Access token lifetime (s); CONTRACT.md caps it at 15 minutes. */
  accessTtlS: number;
  /** Lifetime of each refresh token (s); every refresh hands out a new one. */
  refreshTtlS: number;
  /** Absolute session lifetime (s): no refresh extends a session past it. */
  sessionTtlS: number;
  /** How long a retired signing key stays published after rotation (s); at least the access TTL. */
  keyOverlapS: number;
  /** Signing keys older than this are rotated automatically (s); 0 turns that off. */
  keyMaxAgeS: number;
  /** An operator-given Ed25519 private key (PKCS8 PEM or JWK); keys are then not generated or rotated here. */
  signingKey: string | undefined;
  /** Token bucket per client address on POST /sessions and /sessions/refresh. */
  sessionRate: { ratePerSec: number; burst: number };
}

const DAY = 86_400;

export function loadIdentityConfig(env: Env = process.env): IdentityConfig {
  const accessTtlS = readInt(env, 'APP_IDENTITY_ACCESS_TTL_S', 600, 1, ACCESS_TOKEN_MAX_TTL_S);
  const sessionTtlS = readInt(env, 'APP_IDENTITY_SESSION_TTL_S', 7 * DAY, 1, 365 * DAY);
  const refreshTtlS = readInt(env, 'APP_IDENTITY_REFRESH_TTL_S', DAY, 1, 365 * DAY);
  const keyOverlapS = readInt(env, 'APP_IDENTITY_KEY_OVERLAP_S', accessTtlS + 60, 1, 30 * DAY);
  if (keyOverlapS < accessTtlS) {
    throw new ConfigError('APP_IDENTITY_KEY_OVERLAP_S', 'must be at least APP_IDENTITY_ACCESS_TTL_S, or tokens of a retired key would fail before they expire');
  }
  const keyMaxAgeS = readInt(env, 'APP_IDENTITY_KEY_MAX_AGE_S', 30 * DAY, 0, 3650 * DAY);
  const signingKey = readString(env, 'APP_IDENTITY_SIGNING_KEY', '') || undefined;
  const sessionRate = {
    ratePerSec: readInt(env, 'APP_IDENTITY_SESSIONS_PER_S', 10, 1, 100_000),
    burst: readInt(env, 'APP_IDENTITY_SESSIONS_BURST', 50, 1, 100_000),
  };
  return { accessTtlS, refreshTtlS, sessionTtlS, keyOverlapS, keyMaxAgeS, signingKey, sessionRate };
}
