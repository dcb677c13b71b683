// Every query of the webhooks feature, on the platform Store (SQLite or PostgreSQL), its tables
// resolved once: registrations, the delivery log (the outbox) and its attempts. Each method runs on
// the Store's handle, or on the transaction `tx` of its caller when given.
// Queries on pending heads say `status = 'pending'` and `head = true` with drizzle's eq(): SQLite
// plans them with the bound values and so matches the partial indexes' terms (webhooks.tables.ts),
// and PostgreSQL plans them with the values too (its planner reads `head = true` as `head`).
import { and, asc, count, desc, eq, gt, inArray, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Orm, Store } from '../../../platform/store';
import { webhooksTables, type DeliveryRow, type DeliveryStatus, type DisabledReason, type RegistrationRow } from './webhooks.tables';

/** What an attempt saw, as stored in the delivery's history. */
export interface AttemptRecord {
  seq: number;
  attempt: number;
  startedAt: string;
  durationMs: number;
  responseStatus: number | null;
  error: string | null;
  responseBody: string | null;
}

export function createWebhooksRepository(store: Store) {
  const orm = store.orm;
  const { deliveries, registrations, attempts } = webhooksTables(store.dialect);
  const pendingHead = () => and(eq(deliveries.status, 'pending'), eq(deliveries.head, true));
  const leaseFree = (now: number) => or(isNull(deliveries.leaseUntil), lte(deliveries.leaseUntil, now));
  const ended = () => inArray(deliveries.status, ['delivered', 'failed']);
  const first = async <T>(q: Promise<T[]>): Promise<T | undefined> => (await q)[0];

  return {
    /** One transaction (platform/store/store.ts): committed when `body` resolves, rolled back when it throws. */
    transaction: <T>(body: (tx: Orm) => Promise<T>): Promise<T> => store.transaction(body),

    /**
     * Writing a delivery of an order key and ending one (which makes the next its head) take this lock
     * in their transaction: on PostgreSQL they could otherwise interleave (the new one sees the old one
     * pending, the old one's end does not yet see the new one) and leave a key without a head. SQLite's
     * transactions already take turns.
     */
    lockOrder: (tx: Orm, registrationId: string, orderKey: string) => store.lock(tx, `webhooks-order:${registrationId}:${orderKey}`),
    /** The registration's pending quota, counted and taken in one transaction. */
    lockPending: (tx: Orm, registrationId: string) => store.lock(tx, `webhooks-pending:${registrationId}`),
    /** The owner's registration quota, counted and taken in one transaction. */
    lockQuota: (tx: Orm, owner: string) => store.lock(tx, `webhooks-quota:${owner}`),

    // ---- registrations -------------------------------------------------------------------------

    registrationById: (id: string, db: Orm = orm): Promise<RegistrationRow | undefined> => first(db.select().from(registrations).where(eq(registrations.id, id))),

    /** The registrations of `owner` (all: null), oldest first. */
    registrations: (owner: string | null): Promise<RegistrationRow[]> =>
      orm
        .select()
        .from(registrations)
        .where(owner === null ? undefined : eq(registrations.owner, owner))
        .orderBy(asc(registrations.createdAt), asc(registrations.id)),

    registrationIds: async (): Promise<string[]> => (await orm.select({ id: registrations.id }).from(registrations)).map((r) => r.id),

    activeRegistrations: (db: Orm = orm): Promise<RegistrationRow[]> => db.select().from(registrations).where(eq(registrations.active, true)).orderBy(asc(registrations.id)),

    ownedCount: async (owner: string, db: Orm = orm): Promise<number> => (await first(db.select({ n: count() }).from(registrations).where(eq(registrations.owner, owner))))?.n ?? 0,

    insertRegistration: async (row: typeof registrations.$inferInsert, db: Orm = orm): Promise<RegistrationRow> => (await db.insert(registrations).values(row).returning())[0]!,

    /** The registration as changed; none when it was deleted meanwhile. */
    updateRegistration: (id: string, set: Partial<RegistrationRow>, db: Orm = orm): Promise<RegistrationRow | undefined> =>
      first(db.update(registrations).set(set).where(eq(registrations.id, id)).returning()),

    /** Deliveries and attempts go with it (foreign keys cascade). */
    deleteRegistration: async (id: string, db: Orm = orm) => {
      await db.delete(registrations).where(eq(registrations.id, id));
    },

    /** A registration the receiver (or time) turned off. */
    disableRegistration: async (id: string, d: { reason: DisabledReason; at: string; failingSince: number }, db: Orm = orm) => {
      await db.update(registrations).set({ active: false, disabledReason: d.reason, disabledAt: d.at, failingSince: d.failingSince, updatedAt: d.at }).where(eq(registrations.id, id));
    },

    markFailing: async (id: string, failingSince: number, db: Orm = orm) => {
      await db.update(registrations).set({ failingSince }).where(eq(registrations.id, id));
    },

    clearFailing: async (id: string, db: Orm = orm) => {
      await db.update(registrations).set({ failingSince: null }).where(and(eq(registrations.id, id), isNotNull(registrations.failingSince)));
    },

    target: (id: string, db: Orm = orm) => first(db.select({ url: registrations.url, secret: registrations.secret }).from(registrations).where(eq(registrations.id, id))),

    // ---- the delivery log ------------------------------------------------------------------------

    deliveryBySeq: (seq: number, db: Orm = orm): Promise<DeliveryRow | undefined> => first(db.select().from(deliveries).where(eq(deliveries.seq, seq))),

    /** A delivery of one registration by its public id. */
    deliveryOf: (registrationId: string, id: string): Promise<DeliveryRow | undefined> =>
      first(orm.select().from(deliveries).where(and(eq(deliveries.id, id), eq(deliveries.registrationId, registrationId)))),

    /** A page of a registration's log, newest first, before `beforeSeq`. */
    deliveriesPage: (registrationId: string, q: { beforeSeq: number; status?: DeliveryStatus; limit: number }): Promise<DeliveryRow[]> =>
      orm
        .select()
        .from(deliveries)
        .where(and(eq(deliveries.registrationId, registrationId), lt(deliveries.seq, q.beforeSeq), q.status ? eq(deliveries.status, q.status) : undefined))
        .orderBy(desc(deliveries.seq))
        .limit(q.limit),

    attemptsOf: (seq: number) => orm.select().from(attempts).where(eq(attempts.deliverySeq, seq)).orderBy(asc(attempts.id)),

    pendingCount: async (registrationId: string, db: Orm = orm): Promise<number> =>
      (await first(db.select({ n: count() }).from(deliveries).where(and(eq(deliveries.registrationId, registrationId), eq(deliveries.status, 'pending')))))?.n ?? 0,

    pendingOfKey: (registrationId: string, key: string, db: Orm = orm) =>
      first(
        db
          .select({ seq: deliveries.seq })
          .from(deliveries)
          .where(and(eq(deliveries.registrationId, registrationId), eq(deliveries.orderKey, key), eq(deliveries.status, 'pending')))
          .limit(1),
      ),

    insertDelivery: async (r: { id: string; reg: string; event: string; key: string | null; head: boolean; payload: string; at: number; createdAt: string }, db: Orm = orm): Promise<DeliveryRow> =>
      (await db
        .insert(deliveries)
        .values({ id: r.id, registrationId: r.reg, event: r.event, orderKey: r.key, head: r.head, payload: r.payload, status: 'pending', nextAttemptAt: r.at, createdAt: r.createdAt })
        .returning())[0]!,

    /**
     * Makes a delivery due at `now` in a new round: an ended one pending again, outside the order.
     * Conditional: an attempt in flight (its lease) leaves the row as it is (false).
     */
    requeue: async (seq: number, wasPending: boolean, now: number, db: Orm = orm): Promise<boolean> => {
      const set = wasPending ? { roundAttempts: 0, nextAttemptAt: now } : { status: 'pending' as const, orderKey: null, head: true, roundAttempts: 0, nextAttemptAt: now };
      return (await db.update(deliveries).set(set).where(and(eq(deliveries.seq, seq), leaseFree(now))).returning({ seq: deliveries.seq })).length > 0;
    },

    /** Ends every pending delivery of a registration. */
    failPending: async (registrationId: string, why: string, db: Orm = orm) => {
      await db
        .update(deliveries)
        .set({ status: 'failed', head: false, lastError: why, leaseUntil: null })
        .where(and(eq(deliveries.registrationId, registrationId), eq(deliveries.status, 'pending')));
    },

    // ---- the dispatcher's statements ---------------------------------------------------------------

    // The registrations with pending heads, one after another (each step one index probe, however many
    // deliveries a registration has pending): the dispatcher's candidates for a turn.
    nextRegistrationWithHeads: (after: string, db: Orm = orm) =>
      first(
        db
          .select({ reg: deliveries.registrationId })
          .from(deliveries)
          .where(and(pendingHead(), gt(deliveries.registrationId, after)))
          .orderBy(asc(deliveries.registrationId))
          .limit(1),
      ),
    // A registration's head that is sent next, if it is active: its earliest pending head not in flight.
    firstHeadOf: (registrationId: string, now: number, db: Orm = orm) =>
      first(
        db
          .select({ seq: deliveries.seq, at: deliveries.nextAttemptAt })
          .from(deliveries)
          .innerJoin(registrations, eq(registrations.id, deliveries.registrationId))
          .where(and(eq(deliveries.registrationId, registrationId), pendingHead(), leaseFree(now), eq(registrations.active, true)))
          .orderBy(asc(deliveries.nextAttemptAt), asc(deliveries.seq))
          .limit(1),
      ),
    /** Takes the lease of a due head, in one conditional statement: none when it is no longer a free pending head. */
    lease: (p: { seq: number; now: number; until: number; at: string }, db: Orm = orm) =>
      first(
        db
          .update(deliveries)
          .set({
            leaseUntil: p.until,
            attempts: sql`${deliveries.attempts} + 1`,
            roundAttempts: sql`${deliveries.roundAttempts} + 1`,
            lastAttemptAt: p.at,
          })
          .where(and(eq(deliveries.seq, p.seq), pendingHead(), leaseFree(p.now)))
          .returning(),
      ),
    insertAttempt: async (a: AttemptRecord, db: Orm = orm) => {
      await db.insert(attempts).values({
        deliverySeq: a.seq,
        attempt: a.attempt,
        startedAt: a.startedAt,
        durationMs: a.durationMs,
        responseStatus: a.responseStatus,
        error: a.error,
        responseBody: a.responseBody,
      });
    },
    /** Ends an attempt: delivered, due again at `at` (retry), or failed for good. */
    markOutcome: async (
      seq: number,
      o: { responseStatus: number | null; lastError: string | null; durationMs: number },
      end: { status: 'delivered'; at: string } | { status: 'retry'; at: number } | { status: 'failed' },
      db: Orm = orm,
    ) => {
      const outcome = { responseStatus: o.responseStatus, lastError: o.lastError, lastDurationMs: o.durationMs, leaseUntil: null };
      const set =
        end.status === 'delivered'
          ? { ...outcome, status: 'delivered' as const, head: false, deliveredAt: end.at }
          : end.status === 'retry'
            ? { ...outcome, nextAttemptAt: end.at }
            : { ...outcome, status: 'failed' as const, head: false };
      await db.update(deliveries).set(set).where(eq(deliveries.seq, seq));
    },
    // The next pending delivery of a key becomes its head once the one before it has ended.
    promoteNext: async (registrationId: string, key: string, db: Orm = orm) => {
      await db
        .update(deliveries)
        .set({ head: true })
        .where(
          eq(
            deliveries.seq,
            sql`(SELECT MIN(e.seq) FROM webhooks_deliveries e WHERE e.registration_id = ${registrationId} AND e.order_key = ${key} AND e.status = 'pending')`,
          ),
        );
    },

    /** Pending deliveries with a lease: attempts in flight (or cut short by a stop of Keel). */
    leased: (db: Orm = orm): Promise<DeliveryRow[]> => db.select().from(deliveries).where(and(eq(deliveries.status, 'pending'), isNotNull(deliveries.leaseUntil))),

    /** Gives a leased delivery back, due at `now`. */
    releaseLease: async (seq: number, p: { now: number; roundAttempts: number }, db: Orm = orm) => {
      await db.update(deliveries).set({ leaseUntil: null, nextAttemptAt: p.now, roundAttempts: p.roundAttempts }).where(eq(deliveries.seq, seq));
    },

    /** Deletes the ended deliveries created before `before` (ISO time); how many went. */
    pruneEndedBefore: async (before: string): Promise<number> =>
      (await store.transaction((tx) => tx.delete(deliveries).where(and(ended(), lt(deliveries.createdAt, before))).returning({ seq: deliveries.seq }))).length,

    /** Deletes a registration's ended deliveries beyond its newest `keep`; how many went. */
    async pruneBeyond(registrationId: string, keep: number): Promise<number> {
      const ofReg = and(eq(deliveries.registrationId, registrationId), ended());
      // The newest ended delivery past the count; it and everything older of the registration go.
      const [edge] = await orm.select({ seq: deliveries.seq }).from(deliveries).where(ofReg).orderBy(desc(deliveries.seq)).limit(1).offset(keep);
      if (!edge) return 0;
      return (await store.transaction((tx) => tx.delete(deliveries).where(and(ofReg, lte(deliveries.seq, edge.seq))).returning({ seq: deliveries.seq }))).length;
    },
  };
}

export type WebhooksRepository = ReturnType<typeof createWebhooksRepository>;
