// The outbox's hot statements, on SQLite or PostgreSQL (the Store's tables for its dialect). Each
// takes the handle to run on: the Store's orm, or the transaction of the caller.
// Queries on pending heads say `status = 'pending'` and `head = true` with drizzle's eq(): SQLite
// plans them with the bound values and so matches the partial indexes' terms (webhooks.tables.ts),
// and PostgreSQL plans them with the values too (its planner reads `head = true` as `head`).
import { and, asc, count, eq, gt, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type { Orm, Store } from '../../../platform/store';
import { webhooksTables, type DeliveryRow } from './webhooks.tables';

export function outboxQueries(store: Store) {
  const { deliveries, registrations, attempts } = webhooksTables(store.dialect);
  const pendingHead = () => and(eq(deliveries.status, 'pending'), eq(deliveries.head, true));
  const leaseFree = (now: number) => or(isNull(deliveries.leaseUntil), lte(deliveries.leaseUntil, now));
  const first = async <T>(q: Promise<T[]>): Promise<T | undefined> => (await q)[0];

  return {
    // The registrations with pending heads, one after another (each step one index probe, however many
    // deliveries a registration has pending): the dispatcher's candidates for a turn.
    nextRegistrationWithHeads: (db: Orm, after: string) =>
      first(
        db
          .select({ reg: deliveries.registrationId })
          .from(deliveries)
          .where(and(pendingHead(), gt(deliveries.registrationId, after)))
          .orderBy(asc(deliveries.registrationId))
          .limit(1),
      ),
    // A registration's head that is sent next, if it is active: its earliest pending head not in flight.
    firstHeadOf: (db: Orm, reg: string, now: number) =>
      first(
        db
          .select({ seq: deliveries.seq, at: deliveries.nextAttemptAt })
          .from(deliveries)
          .innerJoin(registrations, eq(registrations.id, deliveries.registrationId))
          .where(and(eq(deliveries.registrationId, reg), pendingHead(), leaseFree(now), eq(registrations.active, true)))
          .orderBy(asc(deliveries.nextAttemptAt), asc(deliveries.seq))
          .limit(1),
      ),
    pendingCount: async (db: Orm, reg: string) =>
      (await first(db.select({ n: count() }).from(deliveries).where(and(eq(deliveries.registrationId, reg), eq(deliveries.status, 'pending')))))?.n ?? 0,
    activeRegistrations: (db: Orm) => db.select().from(registrations).where(eq(registrations.active, true)).orderBy(asc(registrations.id)),
    pendingOfKey: (db: Orm, reg: string, key: string) =>
      first(
        db
          .select({ seq: deliveries.seq })
          .from(deliveries)
          .where(and(eq(deliveries.registrationId, reg), eq(deliveries.orderKey, key), eq(deliveries.status, 'pending')))
          .limit(1),
      ),
    /** Takes the lease of a due head, in one conditional statement: none when it is no longer a free pending head. */
    lease: (db: Orm, p: { seq: number; now: number; until: number; at: string }) =>
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
    target: (db: Orm, id: string) => first(db.select({ url: registrations.url, secret: registrations.secret }).from(registrations).where(eq(registrations.id, id))),
    deliveryBySeq: (db: Orm, seq: number) => first(db.select().from(deliveries).where(eq(deliveries.seq, seq))),
    registrationById: (db: Orm, id: string) => first(db.select().from(registrations).where(eq(registrations.id, id))),
    insertAttempt: (db: Orm, a: { seq: number; attempt: number; startedAt: string; durationMs: number; responseStatus: number | null; error: string | null; responseBody: string | null }) =>
      db.insert(attempts).values({
        deliverySeq: a.seq,
        attempt: a.attempt,
        startedAt: a.startedAt,
        durationMs: a.durationMs,
        responseStatus: a.responseStatus,
        error: a.error,
        responseBody: a.responseBody,
      }),
    /** Ends an attempt: delivered, due again at `at` (retry), or failed for good. */
    markOutcome: (
      db: Orm,
      seq: number,
      o: { responseStatus: number | null; lastError: string | null; durationMs: number },
      end: { status: 'delivered'; at: string } | { status: 'retry'; at: number } | { status: 'failed' },
    ) => {
      const outcome = { responseStatus: o.responseStatus, lastError: o.lastError, lastDurationMs: o.durationMs, leaseUntil: null };
      const set =
        end.status === 'delivered'
          ? { ...outcome, status: 'delivered' as const, head: false, deliveredAt: end.at }
          : end.status === 'retry'
            ? { ...outcome, nextAttemptAt: end.at }
            : { ...outcome, status: 'failed' as const, head: false };
      return db.update(deliveries).set(set).where(eq(deliveries.seq, seq));
    },
    // The next pending delivery of a key becomes its head once the one before it has ended.
    promoteNext: (db: Orm, reg: string, key: string) =>
      db
        .update(deliveries)
        .set({ head: true })
        .where(
          eq(
            deliveries.seq,
            sql`(SELECT MIN(e.seq) FROM webhooks_deliveries e WHERE e.registration_id = ${reg} AND e.order_key = ${key} AND e.status = 'pending')`,
          ),
        ),
    clearFailing: (db: Orm, id: string) => db.update(registrations).set({ failingSince: null }).where(and(eq(registrations.id, id), isNotNull(registrations.failingSince))),
    insertRow: async (db: Orm, r: { id: string; reg: string; event: string; key: string | null; head: boolean; payload: string; at: number; createdAt: string }): Promise<DeliveryRow> =>
      (await db
        .insert(deliveries)
        .values({ id: r.id, registrationId: r.reg, event: r.event, orderKey: r.key, head: r.head, payload: r.payload, status: 'pending', nextAttemptAt: r.at, createdAt: r.createdAt })
        .returning())[0]!,
  };
}

export type OutboxQueries = ReturnType<typeof outboxQueries>;
