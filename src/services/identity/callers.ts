// Who calls the identity service's own routes: a workspace-API admin token (HS256, APP_API_SECRET,
// role admin), or an access token of this service, verified with our own keys and live session state
// (no bus round trip). Free of HTTP: it reads the Authorization header's value only.
import { decodeProtectedHeader } from 'jose';
import { bearerTokenOf, createAccessTokenVerifier } from '../../platform/auth/access-token';
import { forbidden, unauthenticated } from '../../platform/auth/denials';
import { ADMIN_POLICY } from '../../platform/auth/policies';
import { livePrincipal } from '../../platform/auth/session-check';
import { TokenError, verifyHs256 } from '../../platform/auth/workspace-token';
import type { Clock } from '../../platform/runtime';
import type { Caller, Identity } from './identity.service';
import type { KeyStore } from './keys';

export function createCallers(deps: { identity: Identity; keys: KeyStore; clock: Clock; apiSecret: string }) {
  const verify = createAccessTokenVerifier({ keyFor: deps.keys.keyFor, clock: deps.clock });

  /** The caller an Authorization header stands for; 401 or 403 as problem+json codes otherwise. */
  async function callerOf(authorization: string | null): Promise<Caller> {
    const token = bearerTokenOf(authorization);
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw unauthenticated('The access token is not acceptable');
    }
    if (alg === 'HS256') {
      try {
        const claims = verifyHs256(token, deps.apiSecret, deps.clock.now());
        if (claims.role !== 'admin') throw forbidden();
        return { admin: true };
      } catch (e) {
        if (e instanceof TokenError) throw unauthenticated('The admin token is not acceptable');
        throw e;
      }
    }
    const claims = await verify(token);
    const { actorId, policies } = livePrincipal(claims, await deps.identity.sessionState(claims.sessionId, claims.actorId));
    return { admin: policies.includes(ADMIN_POLICY), actorId };
  }

  return { callerOf };
}

export type Callers = ReturnType<typeof createCallers>;
