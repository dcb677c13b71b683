// Actors, API keys and sessions: the rules, free of HTTP. Every denial is an AppError whose code the
// problem+json renderer shows as is (`unauthenticated`, `reauth-required`, IDENTITY_*_NOT_FOUND).
import type { Bus } from '../../platform/bus/bus';
import type { IdentitySessionEndReason } from '../../platform/bus/subjects';
import { AppError } from '../../platform/errors';
import { reauthRequired, unauthenticated } from '../../platform/auth/denials';
import type { SessionState } from '../../platform/auth/session-check';
import { newId, type Clock, type Logger } from '../../platform/runtime';
import type { Orm, Store } from '../../platform/store';
import type { IdentityConfig } from './identity.config';
import type { ActorRow, SessionRow } from './identity.tables';
import { createIdentityRepository } from './identity.repository';
import type { KeyStore } from './keys';
import { API_KEY_PREFIX, hashSecret, isSecretShaped, newSecret, REFRESH_TOKEN_PREFIX, secretHint, signAccessToken } from './tokens';
import { IdentityErrors, identityErrorTable } from './identity.errors';

export interface IdentityDeps {
  store: Store;
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

export const actorNotFound = () => IdentityErrors.IDENTITY_ACTOR_NOT_FOUND('No such actor');
export const sessionNotFound = () => IdentityErrors.IDENTITY_SESSION_NOT_FOUND('No such session');

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

/** What a transaction answers instead of throwing, so that what it wrote is committed (a revocation for reuse). */
interface Denial {
  error: AppError;
  /** The session revoked because its refresh token came back. */
  reuse?: string;
}

export function createIdentity(deps: IdentityDeps) {
  const { store, clock, log, config, keys } = deps;
  const rows = createIdentityRepository(store);
  const findActor = (id: string) => rows.actor(id);
  const findSession = (id: string) => rows.session(id);

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
  async function newRefreshToken(tx: Orm, s: SessionRow, now: number) {
    const refreshToken = newSecret(REFRESH_TOKEN_PREFIX);
    const refreshExpiresAt = Math.min(now + config.refreshTtlS * 1000, s.expiresAt);
    await rows.insertRefreshToken(tx, { hash: hashSecret(refreshToken), sessionId: s.id, createdAt: now, expiresAt: refreshExpiresAt });
    return { refreshToken, refreshExpiresAt };
  }

  /** A refresh token presented a second time: its session ends (unless it already has). Inside the caller's transaction. */
  async function revokeForReuse(tx: Orm, sessionId: string, now: number): Promise<Denial> {
    await rows.revokeSession(sessionId, 'refresh-reuse', now, tx);
    return { error: reauthRequired('refresh-reuse'), reuse: sessionId };
  }

  /** Signs the access token that goes with a refresh token just stored. */
  async function pair(s: SessionRow, a: ActorRow, now: number, r: { refreshToken: string; refreshExpiresAt: number }) {
    const iat = Math.floor(now / 1000);
    // Never past the session's absolute end.
    const exp = Math.max(iat + 1, Math.min(iat + config.accessTtlS, Math.floor(s.expiresAt / 1000)));
    const accessToken = await signAccessToken(await keys.signing(), { sub: a.id, sid: s.id, policies: a.policies, iat, exp });
    return { session: sessionView(s, r.refreshExpiresAt), accessToken, refreshToken: r.refreshToken, expiresIn: exp - iat, tokenType: 'Bearer' as const };
  }

  // Several identity processes may share one PostgreSQL database, so no rule below reads a row and
  // then writes what it read: a write that must see the latest row is conditional (`... WHERE
  // used_at IS NULL RETURNING`), or the transaction first claims the row with a write, which holds
  // it until the commit (PostgreSQL's row lock; on SQLite transactions take turns anyway).
  // Transactions write the tables in one order, actors, sessions, refresh tokens: on PostgreSQL
  // each write also locks its table's row of the change counter (platform/store/store.ts) until the
  // commit, and one order keeps two transactions from waiting on each other.
  const identity = {
    async createActor(input: { name: string; policies: string[] }) {
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
      await rows.insertActor(row);
      log.info('actor created', { actorId: row.id });
      return { actor: actorView(row), apiKey };
    },

    async listActors() {
      return (await rows.listActors()).map(actorView);
    },

    async getActor(id: string) {
      const a = await findActor(id);
      if (!a) throw actorNotFound();
      return actorView(a);
    },

    /**
     * Disabling an actor or changing its policies ends its sessions (re-authentication required).
     * Disabling revokes them for good: re-enabling the actor must not revive a stolen refresh token.
     */
    async updateActor(id: string, patch: { name?: string; disabled?: boolean; policies?: string[] }) {
      const now = clock.now();
      const updated = await rows.transaction(async (tx) => {
        // Claimed first, so that two concurrent updates each build on the other's result (no lost
        // policies-version bump, no missed disable).
        const a = await rows.claimActor(tx, id, now);
        if (!a) return undefined;
        const policies = patch.policies ? [...new Set(patch.policies)].sort() : a.policies;
        const changed = JSON.stringify(policies) !== JSON.stringify(a.policies);
        const next = {
          name: patch.name ?? a.name,
          disabled: patch.disabled ?? a.disabled,
          policies,
          policiesVersion: changed ? a.policiesVersion + 1 : a.policiesVersion,
          updatedAt: now,
        };
        await rows.updateActor(tx, id, next);
        if (next.disabled && !a.disabled) {
          await rows.revokeActorSessions(tx, id, 'actor-disabled', now);
        }
        return { actor: { ...a, ...next }, changed };
      });
      if (!updated) throw actorNotFound();
      log.info('actor updated', { actorId: id, disabled: updated.actor.disabled, policiesChanged: updated.changed });
      return actorView(updated.actor);
    },

    /** A new API key; the old one stops working now and the sessions it opened need re-authentication. */
    async rotateActorKey(id: string) {
      const apiKey = newSecret(API_KEY_PREFIX);
      const now = clock.now();
      const a = await rows.rotateKey(id, { apiKeyHash: hashSecret(apiKey), apiKeyHint: secretHint(apiKey, API_KEY_PREFIX) }, now);
      if (!a) throw actorNotFound();
      log.info('actor api key rotated', { actorId: id });
      return { actor: actorView(a), apiKey };
    },

    async createSession(apiKey: string) {
      if (!isSecretShaped(apiKey, API_KEY_PREFIX)) throw unauthenticated('The API key is not valid');
      const apiKeyHash = hashSecret(apiKey);
      const now = clock.now();
      type Opened = { a: ActorRow; s: SessionRow; r: { refreshToken: string; refreshExpiresAt: number } };
      const opened = await rows.transaction(async (tx): Promise<Denial | Opened> => {
        // The actor's row is claimed with a write that changes nothing: a concurrent disable then
        // waits for this session and revokes it, or commits first and this one is refused. (Read
        // alone, a session opened as the actor is disabled would outlive the disable and come back
        // live on re-enabling.)
        const a = await rows.claimActorByKey(tx, apiKeyHash);
        if (!a) return { error: unauthenticated('The API key is not valid') };
        if (a.disabled) return { error: unauthenticated('The actor is disabled') };
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
        await rows.insertSession(tx, s);
        return { a, s, r: await newRefreshToken(tx, s, now) };
      });
      if ('error' in opened) throw opened.error;
      log.info('session created', { actorId: opened.a.id, sessionId: opened.s.id });
      return pair(opened.s, opened.a, now, opened.r);
    },

    /**
     * Exchanges a refresh token for a new pair. A refresh token presented twice means two parties
     * hold it: the session is revoked (reason refresh-reuse) and both must authenticate again.
     */
    async refreshSession(refreshToken: string) {
      if (!isSecretShaped(refreshToken, REFRESH_TOKEN_PREFIX)) throw unauthenticated('The refresh token is not valid');
      const hash = hashSecret(refreshToken);
      const now = clock.now();
      type Refreshed = { session: SessionRow; actor: ActorRow; next: { refreshToken: string; refreshExpiresAt: number } };
      const outcome = await rows.transaction(async (tx): Promise<Denial | Refreshed> => {
        const rt = await rows.refreshToken(tx, hash);
        const s = rt ? await rows.session(rt.sessionId, tx) : undefined;
        if (!rt || !s) return { error: unauthenticated('The refresh token is not valid') };
        if (rt.usedAt !== null) return revokeForReuse(tx, s.id, now);
        const a = await rows.actor(s.actorId, tx);
        const reason = endReason(s, a);
        if (reason) return { error: reauthRequired(reason) };
        if (now >= rt.expiresAt) return { error: reauthRequired('refresh-expired') };
        // The session, only while it is not revoked: a revocation committed since the read wins,
        // one coming after waits for this commit. Two refreshes of one session take turns here.
        const session = await rows.markRefreshed(tx, s.id, now);
        if (!session) {
          const ended = await rows.session(s.id, tx);
          return { error: reauthRequired(ended?.endReason ?? 'session-revoked') };
        }
        // The token, only if nobody used it since the read: of two concurrent uses exactly one wins,
        // and the other is reuse.
        if (!(await rows.useRefreshToken(tx, hash, now))) return revokeForReuse(tx, s.id, now);
        return { session, actor: a!, next: await newRefreshToken(tx, session, now) };
      });
      if ('error' in outcome) {
        if (outcome.reuse) log.warn('refresh token reused: session revoked', { sessionId: outcome.reuse });
        throw outcome.error;
      }
      return pair(outcome.session, outcome.actor, now, outcome.next);
    },

    /**
     * Revokes a session: its own actor or an admin; anyone else is told it does not exist. Answers the
     * session as it now is (revoked again: as it was, with the first revocation's time).
     */
    async revokeSession(id: string, caller: Caller) {
      const s = await findSession(id);
      if (!s || (!caller.admin && s.actorId !== caller.actorId)) throw sessionNotFound();
      if (s.revokedAt !== null) return sessionView(s, null);
      const revoked = await rows.revokeSession(id, 'session-revoked', clock.now());
      if (revoked) log.info('session revoked', { sessionId: id, byAdmin: caller.admin });
      // Revoked meanwhile by another request: that revocation stands.
      return sessionView(revoked ?? (await findSession(id)) ?? { ...s, revokedAt: clock.now() }, null);
    },

    /** The answer of qry.identity.session. */
    async sessionState(sid: string, sub: string): Promise<SessionState> {
      const s = await findSession(sid);
      if (!s || s.actorId !== sub) return { live: false, reauth: false, reason: 'unknown-session' };
      const a = await findActor(s.actorId);
      const reason = endReason(s, a);
      if (reason === 'unknown-session') return { live: false, reauth: false, reason };
      if (reason) return { live: false, reauth: true, reason };
      return { live: true, reauth: false, policies: a!.policies };
    },

    /** Forgets sessions that ended more than a day ago (their refresh tokens go with them). */
    async sweep() {
      const cutoff = clock.now() - 86_400_000;
      await rows.deleteEndedBefore(cutoff);
    },

    /** Answers the guards of the other services: is a session live (qry.identity.session), and the JWKS. Returns the unsubscribe. */
    listen(bus: Bus): () => void {
      const offs = [
        bus.answer('qry.identity.session', async ({ sid, sub }) => {
          if (typeof sid !== 'string' || typeof sub !== 'string') return { live: false, reauth: false, reason: 'unknown-session' as const };
          return identity.sessionState(sid, sub);
        }, identityErrorTable),
        bus.answer('qry.identity.jwks', () => ({ keys: keys.publicJwks() }), identityErrorTable),
      ];
      return () => offs.forEach((off) => off());
    },
  };
  return identity;
}

export type Identity = ReturnType<typeof createIdentity>;
