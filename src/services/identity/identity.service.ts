// Actors, API keys and sessions: the rules, free of HTTP. Every denial is an AppError whose code the
// problem+json renderer shows as is (`unauthenticated`, `reauth-required`, IDENTITY_*_NOT_FOUND).
import { and, desc, eq, isNull, lt, or } from 'drizzle-orm';
import type { Bus } from '../../platform/bus/bus';
import type { IdentitySessionEndReason } from '../../platform/bus/subjects';
import type { Db } from '../../platform/db';
import { AppError } from '../../platform/errors';
import './identity.errors';
import { reauthRequired, unauthenticated } from '../../platform/auth/denials';
import type { SessionState } from '../../platform/auth/session-check';
import { newId, type Clock, type Logger } from '../../platform/runtime';
import type { IdentityConfig } from './identity.config';
import { actors, refreshTokens, sessions, type ActorRow, type SessionRow } from './identity.tables';
import type { KeyStore } from './keys';
import { API_KEY_PREFIX, hashSecret, isSecretShaped, newSecret, REFRESH_TOKEN_PREFIX, secretHint, signAccessToken } from './tokens';

export interface IdentityDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  config: IdentityConfig;
  keys: KeyStore;
}

/** Who is asking: an admin (workspace admin token or policy admin:identity) or an actor's session. */
export interface Caller {
  admin: boolean;
  /** Absent for a workspace admin token, which stands for no actor. */
  actorId?: string;
}

export const actorNotFound = () => new AppError('IDENTITY_ACTOR_NOT_FOUND', 'No such actor');
export const sessionNotFound = () => new AppError('IDENTITY_SESSION_NOT_FOUND', 'No such session');

export function actorView(a: ActorRow) {
  return {
    id: a.id,
    name: a.name,
    policies: a.policies,
    disabled: a.disabled,
    apiKeyHint: a.apiKeyHint,
    keyRotatedAt: a.keyRotatedAt,
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
  };
}

export function sessionView(s: SessionRow, refreshExpiresAt: number | null) {
  return {
    id: s.id,
    actorId: s.actorId,
    createdAt: s.createdAt,
    expiresAt: s.expiresAt,
    refreshExpiresAt,
    revokedAt: s.revokedAt,
  };
}

export function createIdentity(deps: IdentityDeps) {
  const { db, clock, log, config, keys } = deps;

  const findActor = (id: string) => db.select().from(actors).where(eq(actors.id, id)).get();
  const findSession = (id: string) => db.select().from(sessions).where(eq(sessions.id, id)).get();

  /** Why a session is not live, or undefined when it is. The one rule the bus, refresh and revoke share. */
  function endReason(s: SessionRow, a: ActorRow | undefined): IdentitySessionEndReason | undefined {
    if (!a) return 'unknown-session';
    if (s.revokedAt !== null) return s.endReason ?? 'session-revoked';
    if (a.disabled) return 'actor-disabled';
    if (s.keyVersion !== a.keyVersion) return 'key-rotated';
    if (s.policiesVersion !== a.policiesVersion) return 'policies-changed';
    if (clock.now() >= s.expiresAt) return 'session-expired';
    return undefined;
  }

  /** Stores a new refresh token for the session (inside the caller's transaction) and returns it. */
  function newRefreshToken(tx: Pick<Db, 'insert'>, s: SessionRow, now: number) {
    const refreshToken = newSecret(REFRESH_TOKEN_PREFIX);
    const refreshExpiresAt = Math.min(now + config.refreshTtlS * 1000, s.expiresAt);
    tx.insert(refreshTokens).values({ hash: hashSecret(refreshToken), sessionId: s.id, createdAt: now, expiresAt: refreshExpiresAt }).run();
    return { refreshToken, refreshExpiresAt };
  }

  /** Signs the access token that goes with a refresh token just stored. */
  async function pair(s: SessionRow, a: ActorRow, now: number, r: { refreshToken: string; refreshExpiresAt: number }) {
    const iat = Math.floor(now / 1000);
    // Never past the session's absolute end.
    const exp = Math.max(iat + 1, Math.min(iat + config.accessTtlS, Math.floor(s.expiresAt / 1000)));
    const accessToken = await signAccessToken(await keys.signing(), { sub: a.id, sid: s.id, policies: a.policies, iat, exp });
    return { session: sessionView(s, r.refreshExpiresAt), accessToken, refreshToken: r.refreshToken, expiresIn: exp - iat, tokenType: 'Bearer' as const };
  }

  const identity = {
    createActor(input: { name: string; policies: string[] }) {
      const now = clock.now();
      const apiKey = newSecret(API_KEY_PREFIX);
      const row: ActorRow = {
        id: newId('act', clock),
        name: input.name,
        policies: [...new Set(input.policies)].sort(),
        disabled: false,
        apiKeyHash: hashSecret(apiKey),
        apiKeyHint: secretHint(apiKey, API_KEY_PREFIX),
        keyVersion: 1,
        policiesVersion: 1,
        keyRotatedAt: null,
        createdAt: now,
        updatedAt: now,
      };
      db.insert(actors).values(row).run();
      log.info('actor created', { actorId: row.id });
      return { actor: actorView(row), apiKey };
    },

    listActors() {
      return db.select().from(actors).orderBy(desc(actors.createdAt)).all().map(actorView);
    },

    getActor(id: string) {
      const a = findActor(id);
      if (!a) throw actorNotFound();
      return actorView(a);
    },

    /**
     * Disabling an actor or changing its policies ends its sessions (re-authentication required).
     * Disabling revokes them for good: re-enabling the actor must not revive a stolen refresh token.
     */
    updateActor(id: string, patch: { name?: string; disabled?: boolean; policies?: string[] }) {
      const a = findActor(id);
      if (!a) throw actorNotFound();
      const policies = patch.policies ? [...new Set(patch.policies)].sort() : a.policies;
      const changed = JSON.stringify(policies) !== JSON.stringify(a.policies);
      const now = clock.now();
      const next = {
        name: patch.name ?? a.name,
        disabled: patch.disabled ?? a.disabled,
        policies,
        policiesVersion: changed ? a.policiesVersion + 1 : a.policiesVersion,
        updatedAt: now,
      };
      db.transaction((tx) => {
        tx.update(actors).set(next).where(eq(actors.id, id)).run();
        if (next.disabled && !a.disabled) {
          tx.update(sessions)
            .set({ revokedAt: now, endReason: 'actor-disabled' })
            .where(and(eq(sessions.actorId, id), isNull(sessions.revokedAt)))
            .run();
        }
      });
      log.info('actor updated', { actorId: id, disabled: next.disabled, policiesChanged: changed });
      return actorView({ ...a, ...next });
    },

    /** A new API key; the old one stops working now and the sessions it opened need re-authentication. */
    rotateActorKey(id: string) {
      const a = findActor(id);
      if (!a) throw actorNotFound();
      const apiKey = newSecret(API_KEY_PREFIX);
      const now = clock.now();
      const next = { apiKeyHash: hashSecret(apiKey), apiKeyHint: secretHint(apiKey, API_KEY_PREFIX), keyVersion: a.keyVersion + 1, keyRotatedAt: now, updatedAt: now };
      db.update(actors).set(next).where(eq(actors.id, id)).run();
      log.info('actor api key rotated', { actorId: id });
      return { actor: actorView({ ...a, ...next }), apiKey };
    },

    async createSession(apiKey: string) {
      const a = isSecretShaped(apiKey, API_KEY_PREFIX)
        ? db.select().from(actors).where(eq(actors.apiKeyHash, hashSecret(apiKey))).get()
        : undefined;
      if (!a) throw unauthenticated('The API key is not valid');
      if (a.disabled) throw unauthenticated('The actor is disabled');
      const now = clock.now();
      const s: SessionRow = {
        id: newId('ses', clock),
        actorId: a.id,
        keyVersion: a.keyVersion,
        policiesVersion: a.policiesVersion,
        createdAt: now,
        expiresAt: now + config.sessionTtlS * 1000,
        refreshedAt: null,
        revokedAt: null,
        endReason: null,
      };
      const r = db.transaction((tx) => {
        tx.insert(sessions).values(s).run();
        return newRefreshToken(tx, s, now);
      });
      log.info('session created', { actorId: a.id, sessionId: s.id });
      return pair(s, a, now, r);
    },

    /**
     * Exchanges a refresh token for a new pair. A refresh token presented twice means two parties
     * hold it: the session is revoked (reason refresh-reuse) and both must authenticate again.
     */
    async refreshSession(refreshToken: string) {
      const hash = isSecretShaped(refreshToken, REFRESH_TOKEN_PREFIX) ? hashSecret(refreshToken) : undefined;
      const now = clock.now();
      // Synchronous transaction: of two concurrent uses of one token, exactly one wins.
      const outcome = db.transaction((tx) => {
        const rt = hash ? tx.select().from(refreshTokens).where(eq(refreshTokens.hash, hash)).get() : undefined;
        if (!rt) return { error: unauthenticated('The refresh token is not valid') };
        const s = tx.select().from(sessions).where(eq(sessions.id, rt.sessionId)).get()!;
        const a = tx.select().from(actors).where(eq(actors.id, s.actorId)).get();
        if (rt.usedAt !== null) {
          if (s.revokedAt === null) {
            tx.update(sessions).set({ revokedAt: now, endReason: 'refresh-reuse' }).where(eq(sessions.id, s.id)).run();
          }
          return { error: reauthRequired('refresh-reuse'), reuse: s.id };
        }
        const reason = endReason(s, a);
        if (reason) return { error: reauthRequired(reason) };
        if (now >= rt.expiresAt) return { error: reauthRequired('refresh-expired') };
        tx.update(refreshTokens).set({ usedAt: now }).where(eq(refreshTokens.hash, rt.hash)).run();
        tx.update(sessions).set({ refreshedAt: now }).where(eq(sessions.id, s.id)).run();
        const session = { ...s, refreshedAt: now };
        return { session, actor: a!, next: newRefreshToken(tx, session, now) };
      });
      if ('error' in outcome) {
        if (outcome.reuse) log.warn('refresh token reused: session revoked', { sessionId: outcome.reuse });
        throw outcome.error;
      }
      return pair(outcome.session, outcome.actor, now, outcome.next);
    },

    /** Revokes a session: its own actor or an admin; anyone else is told it does not exist. */
    revokeSession(id: string, caller: Caller) {
      const s = findSession(id);
      if (!s || (!caller.admin && s.actorId !== caller.actorId)) throw sessionNotFound();
      if (s.revokedAt === null) {
        db.update(sessions).set({ revokedAt: clock.now(), endReason: 'session-revoked' }).where(eq(sessions.id, id)).run();
        log.info('session revoked', { sessionId: id, byAdmin: caller.admin });
      }
    },

    /** The answer of qry.identity.session. */
    sessionState(sid: string, sub: string): SessionState {
      const s = findSession(sid);
      if (!s || s.actorId !== sub) return { live: false, reauth: false, reason: 'unknown-session' };
      const a = findActor(s.actorId);
      const reason = endReason(s, a);
      if (reason === 'unknown-session') return { live: false, reauth: false, reason };
      if (reason) return { live: false, reauth: true, reason };
      return { live: true, reauth: false, policies: a!.policies };
    },

    /** Forgets sessions that ended more than a day ago (their refresh tokens go with them). */
    sweep() {
      const cutoff = clock.now() - 86_400_000;
      db.delete(sessions).where(or(lt(sessions.expiresAt, cutoff), lt(sessions.revokedAt, cutoff))).run();
    },

    /** Answers the guards of the other services: is a session live (qry.identity.session), and the JWKS. Returns the unsubscribe. */
    listen(bus: Bus): () => void {
      const offs = [
        bus.answer('qry.identity.session', ({ sid, sub }) => {
          if (typeof sid !== 'string' || typeof sub !== 'string') return { live: false, reauth: false, reason: 'unknown-session' as const };
          return identity.sessionState(sid, sub);
        }),
        bus.answer('qry.identity.jwks', () => ({ keys: keys.publicJwks() })),
      ];
      return () => offs.forEach((off) => off());
    },
  };
  return identity;
}

export type Identity = ReturnType<typeof createIdentity>;
