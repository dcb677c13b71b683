// Is a token's session still live? `qry.identity.session` behind a short, bounded cache (so a
// revocation is refused everywhere within `ttlMs`), and the one rule that turns the answer into a
// principal, used by the Bearer guard and by the identity service on its own routes.
import type { Bus } from '../bus/bus';
import type { BusQueries } from '../bus/subjects';
import { systemClock, type Clock } from '../runtime';
import type { AccessClaims, Principal } from './access-token';
import { identityUnavailable, reauthRequired, unauthenticated } from './denials';

export type SessionState = BusQueries['qry.identity.session']['reply'];

/** Concurrent checks of one session share one request; a bus failure is 503 identity-unavailable (fail closed). */
export function createSessionCheck(bus: Bus, opts: { ttlMs?: number; maxEntries?: number; timeoutMs?: number; clock?: Clock } = {}) {
  const ttlMs = opts.ttlMs ?? 2000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const clock = opts.clock ?? systemClock;
  const cache = new Map<string, { reply: SessionState; at: number }>();
  const inflight = new Map<string, Promise<SessionState>>();

  return async function check(sid: string, sub: string): Promise<SessionState> {
    const key = `${sub}\u0000${sid}`;
    const hit = cache.get(key);
    if (hit && clock.now() - hit.at < ttlMs) return hit.reply;
    let p = inflight.get(key);
    if (!p) {
      p = bus
        .request('qry.identity.session', { sid, sub }, { timeoutMs: opts.timeoutMs ?? 2000 })
        .then((reply) => {
          cache.delete(key);
          cache.set(key, { reply, at: clock.now() });
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
  };
}

/**
 * The principal a verified token stands for, given the live answer for its session: a session that
 * ended is refused, and a policy withdrawn since the token was signed stops working now, not at the
 * token's expiry.
 */
export function livePrincipal(claims: AccessClaims, state: SessionState): Principal {
  if (!state.live) throw state.reauth ? reauthRequired(state.reason ?? 'session-ended') : unauthenticated('The session is not known');
  const policies = state.policies ? claims.policies.filter((p) => state.policies!.includes(p)) : claims.policies;
  return { actorId: claims.actorId, sessionId: claims.sessionId, policies };
}
