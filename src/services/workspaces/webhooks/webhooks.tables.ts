// Webhook registrations, their deliveries (the outbox) and one row per delivery attempt.
// A delivery row is written when the event is received and stays until it is delivered or failed
// for good, so a restart of Keel resumes it; attempts keep what each try saw, for the delivery log.
import { sql } from 'drizzle-orm';
import { defineTables } from '../../../platform/db-schema';
import { eventInboxTable } from '../../../platform/bus/outbox-table';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Why a registration stopped receiving: turned off by its owner, answered 410, or failed for too long. */
export type DisabledReason = 'manual' | 'gone' | 'failing';

export const webhooksTables = defineTables((t) => {
  const isHead = t.isTrue('head');
  const { index, integer, table, text } = t;
  const registrations = table(
    'webhooks_registrations',
    {
      id: text('id').primaryKey(),
      owner: text('owner').notNull(),
      /** Created with an admin token: receives every workspace's events, not only the owner's. */
      allWorkspaces: integer('all_workspaces', { mode: 'boolean' }).notNull().default(false),
      url: text('url').notNull(),
      /** JSON array of event names, or ["*"]. */
      events: text('events', { mode: 'json' }).$type<string[]>().notNull(),
      /** Never returned by the API and never logged. */
      secret: text('secret').notNull(),
      active: integer('active', { mode: 'boolean' }).notNull().default(true),
      disabledReason: text('disabled_reason').$type<DisabledReason>(),
      disabledAt: text('disabled_at'),
      /** Epoch ms of the first failed attempt since the last success; null while healthy. */
      failingSince: integer('failing_since'),
      createdAt: text('created_at').notNull(),
      updatedAt: text('updated_at').notNull(),
    },
    (t) => [index('webhooks_registrations_owner_idx').on(t.owner, t.createdAt)],
  );

  const deliveries = table(
    'webhooks_deliveries',
    {
      /** Insertion order: the order deliveries of one workspace go out in. */
      seq: integer('seq').primaryKey({ autoIncrement: true }),
      /** The delivery id receivers see (X-Webhook-Delivery, webhook-id); the same on every attempt. */
      id: text('id').notNull().unique(),
      registrationId: text('registration_id')
        .notNull()
        .references(() => registrations.id, { onDelete: 'cascade' }),
      event: text('event').notNull(),
      /** Deliveries with the same key (per registration) go out one after the other; null: no order (ping, redelivery). */
      orderKey: text('order_key'),
      /**
       * True for the oldest pending delivery of its order key (and for any without a key): only heads
       * are sent. When a head ends (delivered or failed for good) the next pending one of its key becomes head.
       */
      head: integer('head', { mode: 'boolean' }).notNull().default(true),
      /** The exact body sent on every attempt, so signatures and receivers see the same bytes. */
      payload: text('payload').notNull(),
      status: text('status').$type<DeliveryStatus>().notNull(),
      /** Attempts made so far, over the delivery's whole life (redeliveries included). */
      attempts: integer('attempts').notNull().default(0),
      /** Attempts in the current round of the retry schedule (a redelivery starts a new round). */
      roundAttempts: integer('round_attempts').notNull().default(0),
      /** Epoch ms: not sent before. */
      nextAttemptAt: integer('next_attempt_at').notNull(),
      /** Epoch ms until which one dispatcher owns the delivery (an attempt in flight). */
      leaseUntil: integer('lease_until'),
      responseStatus: integer('response_status'),
      lastError: text('last_error'),
      lastDurationMs: integer('last_duration_ms'),
      createdAt: text('created_at').notNull(),
      lastAttemptAt: text('last_attempt_at'),
      deliveredAt: text('delivered_at'),
    },
    (t) => [
      // The dispatcher's scan: pending heads by due time (queries repeat these literal terms so SQLite uses it).
      index('webhooks_deliveries_due_idx').on(t.nextAttemptAt).where(sql`status = 'pending' AND ${isHead}`),
      // One registration's next due head (the dispatcher's turns) and its pending count.
      index('webhooks_deliveries_registration_due_idx').on(t.registrationId, t.nextAttemptAt).where(sql`status = 'pending' AND ${isHead}`),
      index('webhooks_deliveries_order_idx').on(t.registrationId, t.orderKey, t.seq).where(sql`status = 'pending'`),
      index('webhooks_deliveries_log_idx').on(t.registrationId, t.seq),
    ],
  );

  const attempts = table(
    'webhooks_attempts',
    {
      id: integer('id').primaryKey({ autoIncrement: true }),
      deliverySeq: integer('delivery_seq')
        .notNull()
        .references(() => deliveries.seq, { onDelete: 'cascade' }),
      /** 1 for the first attempt of the delivery. */
      attempt: integer('attempt').notNull(),
      startedAt: text('started_at').notNull(),
      durationMs: integer('duration_ms').notNull(),
      /** null when no HTTP answer came (refused target, network error, timeout). */
      responseStatus: integer('response_status'),
      error: text('error'),
      /** The first bytes of the receiver's answer, for the log (capped). */
      responseBody: text('response_body'),
    },
    (t) => [index('webhooks_attempts_delivery_idx').on(t.deliverySeq, t.attempt)],
  );


  /** The workspace event ids already turned into deliveries: an event delivered twice by the bus makes one delivery per registration. */
  const eventInbox = eventInboxTable(t, 'webhooks_event_inbox');
  return { registrations, deliveries, attempts, eventInbox };
});

export const { registrations, deliveries, attempts, eventInbox } = webhooksTables('sqlite');

export type RegistrationRow = typeof registrations.$inferSelect;
export type DeliveryRow = typeof deliveries.$inferSelect;
export type AttemptRow = typeof attempts.$inferSelect;
