// The shape of a service's event outbox table. Each service declares its own table with this factory
// in its *.tables.ts, with the builders of platform/db-schema.ts (it owns the rows; drizzle-kit finds it there); event-outbox.ts relays the rows.
import type { TableBuilders } from '../db-schema';

export function eventOutboxTable({ table, text, integer, index }: TableBuilders, name: string) {
  return table(
    name,
    {
      /** Insertion order: the order events are relayed in. */
      seq: integer('seq').primaryKey({ autoIncrement: true }),
      /** The event id every payload carries (`eventId`); also the JetStream message id, so a resend is dropped by the stream. */
      eventId: text('event_id').notNull().unique(),
      subject: text('subject').notNull(),
      /** The JSON payload, exactly as published. */
      payload: text('payload').notNull(),
      /** Epoch ms. */
      createdAt: integer('created_at').notNull(),
      /** Epoch ms the bus took the event (stored by JetStream on NATS); null until then. */
      sentAt: integer('sent_at'),
    },
    (t) => [index(`${name}_unsent_idx`).on(t.sentAt, t.seq)],
  );
}

export type EventOutboxTable = ReturnType<typeof eventOutboxTable>;

/** An idempotent consumer's memory: the event ids it has acted on (the row is written with the effect). */
export function eventInboxTable({ table, text, integer }: TableBuilders, name: string) {
  return table(name, {
    eventId: text('event_id').primaryKey(),
    /** Epoch ms. */
    receivedAt: integer('received_at').notNull(),
  });
}

export type EventInboxTable = ReturnType<typeof eventInboxTable>;
