// Every query of the identity service: actors, sessions and refresh tokens. Each query runs on
// `tx` when given (the caller's store.transaction), else on the Store. Writes that must see the
// latest row are conditional (`... WHERE revoked_at IS NULL RETURNING`) or claim the row first
// (identity.service.ts says why).
import { and, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { IdentitySessionEndReason } from '../../platform/bus/subjects';
import type { Orm, Store } from '../../platform/store';
import { identityTables, type ActorRow, type SessionRow } from './identity.tables';

export function createIdentityRepository(store: Store) {
  const db = store.orm;
  const { actors, sessions, refreshTokens } = identityTables(store.dialect);

  return {
    transaction: <T>(body: (tx: Orm) => Promise<T>) => store.transaction(body),

    actor: async (id: string, tx: Orm = db): Promise<ActorRow | undefined> => (await tx.select().from(actors).where(eq(actors.id, id)).limit(1))[0],
    session: async (id: string, tx: Orm = db): Promise<SessionRow | undefined> => (await tx.select().from(sessions).where(eq(sessions.id, id)).limit(1))[0],
    listActors: (): Promise<ActorRow[]> => db.select().from(actors).orderBy(desc(actors.createdAt)),
    async insertActor(row: ActorRow): Promise<void> {
      await db.insert(actors).values(row);
    },
    /** Claims the actor's row with a write (its updatedAt), holding it until the commit; undefined when there is none. */
    claimActor: async (tx: Orm, id: string, now: number): Promise<ActorRow | undefined> =>
      (await tx.update(actors).set({ updatedAt: now }).where(eq(actors.id, id)).returning())[0],
    /** Claims the row of the actor whose API key hashes to `apiKeyHash` with a write that changes nothing. */
    claimActorByKey: async (tx: Orm, apiKeyHash: string): Promise<ActorRow | undefined> =>
      (await tx.update(actors).set({ updatedAt: sql`${actors.updatedAt}` }).where(eq(actors.apiKeyHash, apiKeyHash)).returning())[0],
    async updateActor(tx: Orm, id: string, next: Pick<ActorRow, 'name' | 'disabled' | 'policies' | 'policiesVersion' | 'updatedAt'>): Promise<void> {
      await tx.update(actors).set(next).where(eq(actors.id, id));
    },
    /** A new API key (its hash and hint), the key version moved on; undefined when there is no such actor. */
    rotateKey: async (id: string, key: { apiKeyHash: string; apiKeyHint: string }, now: number): Promise<ActorRow | undefined> =>
      (await db.update(actors).set({ ...key, keyVersion: sql`${actors.keyVersion} + 1`, keyRotatedAt: now, updatedAt: now }).where(eq(actors.id, id)).returning())[0],

    async insertSession(tx: Orm, s: SessionRow): Promise<void> {
      await tx.insert(sessions).values(s);
    },
    /** Ends the session unless it already ended; the row as revoked, or undefined when it was already. */
    revokeSession: async (id: string, reason: IdentitySessionEndReason, now: number, tx: Orm = db): Promise<SessionRow | undefined> =>
      (await tx.update(sessions).set({ revokedAt: now, endReason: reason }).where(and(eq(sessions.id, id), isNull(sessions.revokedAt))).returning())[0],
    async revokeActorSessions(tx: Orm, actorId: string, reason: IdentitySessionEndReason, now: number): Promise<void> {
      await tx.update(sessions).set({ revokedAt: now, endReason: reason }).where(and(eq(sessions.actorId, actorId), isNull(sessions.revokedAt)));
    },
    /** Marks the session refreshed while it is not revoked; undefined when it is. */
    markRefreshed: async (tx: Orm, id: string, now: number): Promise<SessionRow | undefined> =>
      (await tx.update(sessions).set({ refreshedAt: now }).where(and(eq(sessions.id, id), isNull(sessions.revokedAt))).returning())[0],
    /** Forgets sessions that expired or were revoked before `cutoff` (their refresh tokens go with them). */
    async deleteEndedBefore(cutoff: number): Promise<void> {
      await db.delete(sessions).where(or(lt(sessions.expiresAt, cutoff), lt(sessions.revokedAt, cutoff)));
    },

    async insertRefreshToken(tx: Orm, row: { hash: string; sessionId: string; createdAt: number; expiresAt: number }): Promise<void> {
      await tx.insert(refreshTokens).values(row);
    },
    refreshToken: async (tx: Orm, hash: string) => (await tx.select().from(refreshTokens).where(eq(refreshTokens.hash, hash)).limit(1))[0],
    /** Marks the token used unless somebody did first: false then (of two concurrent uses exactly one wins). */
    useRefreshToken: async (tx: Orm, hash: string, now: number): Promise<boolean> =>
      (await tx.update(refreshTokens).set({ usedAt: now }).where(and(eq(refreshTokens.hash, hash), isNull(refreshTokens.usedAt))).returning()).length > 0,
  };
}

export type IdentityRepository = ReturnType<typeof createIdentityRepository>;
