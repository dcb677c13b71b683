// The shape of a service's event outbox table. Each service declares its own table with this factory
// in its *.tables.ts (it owns the rows; drizzle-kit finds it there); event-outbox.ts relays the rows.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export function eventOutboxTable(name: string) {
  return sqliteTable(
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
export function eventInboxTable(name: string) {
  return sqliteTable(name, {
    eventId: text('event_id').primaryKey(),
    /** Epoch ms. */
    receivedAt: integer('received_at').notNull(),
  });
}

export type EventInboxTable = ReturnType<typeof eventInboxTable>;
