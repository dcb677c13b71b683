// The outbox's hot statements, prepared once: building drizzle SQL per call costs more than running it.
// Queries on pending heads repeat the literal terms of the partial index so SQLite uses it.
import { and, asc, count, eq, gt, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type { Db } from '../../../platform/db';
import { attempts, deliveries, registrations } from './webhooks.tables';

export function prepareOutboxQueries(db: Db) {
  const PENDING_HEAD = sql`${deliveries.status} = 'pending' AND ${deliveries.head} = 1`;
  const leaseFree = or(isNull(deliveries.leaseUntil), lte(deliveries.leaseUntil, sql.placeholder('now')));
  // The registrations with pending heads, one after another (each step one index probe, however many
  // deliveries a registration has pending): the dispatcher's candidates for a turn.
  const nextRegistrationWithHeads = db
    .select({ reg: deliveries.registrationId })
    .from(deliveries)
    .where(and(PENDING_HEAD, gt(deliveries.registrationId, sql.placeholder('after'))))
    .orderBy(asc(deliveries.registrationId))
    .limit(1)
    .prepare();
  // A registration's head that is sent next, if it is active: its earliest pending head not in flight.
  const firstHeadOf = db
    .select({ seq: deliveries.seq, at: deliveries.nextAttemptAt })
    .from(deliveries)
    .innerJoin(registrations, eq(registrations.id, deliveries.registrationId))
    .where(and(eq(deliveries.registrationId, sql.placeholder('reg')), PENDING_HEAD, leaseFree, eq(registrations.active, true)))
    .orderBy(asc(deliveries.nextAttemptAt), asc(deliveries.seq))
    .limit(1)
    .prepare();
  const pendingCount = db
    .select({ n: count() })
    .from(deliveries)
    .where(and(eq(deliveries.registrationId, sql.placeholder('reg')), sql`${deliveries.status} = 'pending'`))
    .prepare();
  const activeRegistrations = db.select().from(registrations).where(eq(registrations.active, true)).prepare();
  const pendingOfKey = db
    .select({ seq: deliveries.seq })
    .from(deliveries)
    .where(and(eq(deliveries.registrationId, sql.placeholder('reg')), eq(deliveries.orderKey, sql.placeholder('key')), sql`${deliveries.status} = 'pending'`))
    .limit(1)
    .prepare();
  const lease = db
    .update(deliveries)
    .set({
      leaseUntil: sql`${sql.placeholder('until')}`,
      attempts: sql`${deliveries.attempts} + 1`,
      roundAttempts: sql`${deliveries.roundAttempts} + 1`,
      lastAttemptAt: sql`${sql.placeholder('at')}`,
    })
    .where(and(eq(deliveries.seq, sql.placeholder('seq')), PENDING_HEAD, or(isNull(deliveries.leaseUntil), lte(deliveries.leaseUntil, sql.placeholder('now')))))
    .returning()
    .prepare();
  const target = db.select({ url: registrations.url, secret: registrations.secret }).from(registrations).where(eq(registrations.id, sql.placeholder('id'))).prepare();
  const deliveryBySeq = db.select().from(deliveries).where(eq(deliveries.seq, sql.placeholder('seq'))).prepare();
  const registrationById = db.select().from(registrations).where(eq(registrations.id, sql.placeholder('id'))).prepare();
  const insertAttempt = db
    .insert(attempts)
    .values({
      deliverySeq: sql.placeholder('seq'),
      attempt: sql.placeholder('attempt'),
      startedAt: sql.placeholder('startedAt'),
      durationMs: sql.placeholder('durationMs'),
      responseStatus: sql.placeholder('responseStatus'),
      error: sql.placeholder('error'),
      responseBody: sql.placeholder('responseBody'),
    })
    .prepare();
  const outcome = {
    responseStatus: sql`${sql.placeholder('responseStatus')}`,
    lastError: sql`${sql.placeholder('lastError')}`,
    lastDurationMs: sql`${sql.placeholder('durationMs')}`,
    leaseUntil: null,
  };
  const bySeq = eq(deliveries.seq, sql.placeholder('seq'));
  const markDelivered = db.update(deliveries).set({ ...outcome, status: 'delivered', head: false, deliveredAt: sql`${sql.placeholder('at')}` }).where(bySeq).prepare();
  const markRetry = db.update(deliveries).set({ ...outcome, nextAttemptAt: sql`${sql.placeholder('at')}` }).where(bySeq).prepare();
  const markFailed = db.update(deliveries).set({ ...outcome, status: 'failed', head: false }).where(bySeq).prepare();
  // The next pending delivery of a key becomes its head once the one before it has ended.
  const promoteNext = db
    .update(deliveries)
    .set({ head: true })
    .where(
      eq(
        deliveries.seq,
        sql`(SELECT MIN(e.seq) FROM webhooks_deliveries e WHERE e.registration_id = ${sql.placeholder('reg')} AND e.order_key = ${sql.placeholder('key')} AND e.status = 'pending')`,
      ),
    )
    .prepare();
  const clearFailing = db.update(registrations).set({ failingSince: null }).where(and(eq(registrations.id, sql.placeholder('id')), isNotNull(registrations.failingSince))).prepare();

  const insertRow = db
    .insert(deliveries)
    .values({
      id: sql.placeholder('id'),
      registrationId: sql.placeholder('reg'),
      event: sql.placeholder('event'),
      orderKey: sql.placeholder('key'),
      head: sql.placeholder('head'),
      payload: sql.placeholder('payload'),
      status: 'pending',
      nextAttemptAt: sql.placeholder('at'),
      createdAt: sql.placeholder('createdAt'),
    })
    .returning()
    .prepare();

  return { nextRegistrationWithHeads, firstHeadOf, pendingCount, activeRegistrations, pendingOfKey, lease, target, deliveryBySeq, registrationById, insertAttempt, markDelivered, markRetry, markFailed, promoteNext, clearFailing, insertRow };
}

export type OutboxQueries = ReturnType<typeof prepareOutboxQueries>;
