// Every query of the event outbox and inbox (event-outbox.ts), on a service's own tables
// (outbox-table.ts): the relay's unsent rows, their marks, the prune, and the inbox's seen ids.
import { and, asc, inArray, isNotNull, isNull, lt } from 'drizzle-orm';
import type { Orm } from '../store';
import type { EventInboxTable, EventOutboxTable } from './outbox-table';

/** A transaction handle (or the database itself) of the caller's own write. */
export type OutboxTx = Pick<Orm, 'insert' | 'select'>;

export type OutboxRow = EventOutboxTable['$inferSelect'];

export function createOutboxRows(db: Orm, table: EventOutboxTable) {
  return {
    /** The oldest `limit` rows not sent yet, in insertion order. */
    unsent: (limit: number): Promise<OutboxRow[]> => db.select().from(table).where(isNull(table.sentAt)).orderBy(asc(table.seq)).limit(limit),
    async markSent(seqs: number[], at: number): Promise<void> {
      await db.update(table).set({ sentAt: at }).where(inArray(table.seq, seqs));
    },
    /** Writes an unsent event through `tx`, the caller's transaction. */
    async insert(tx: OutboxTx, row: { eventId: string; subject: string; payload: string; createdAt: number }): Promise<void> {
      await tx.insert(table).values(row);
    },
    /** Removes rows sent and created before `before`. */
    async pruneSent(before: number): Promise<void> {
      await db.delete(table).where(and(isNotNull(table.sentAt), lt(table.createdAt, before)));
    },
  };
}

export function createInboxRows(table: EventInboxTable) {
  return {
    async pruneBefore(tx: Orm, before: number): Promise<void> {
      await tx.delete(table).where(lt(table.receivedAt, before));
    },
    /**
     * Records the id as seen; false when it was already. One statement: of two deliveries of the id,
     * in one process or two, one inserts and the other finds it there.
     */
    seen: async (tx: Orm, eventId: string, at: number): Promise<boolean> =>
      (await tx.insert(table).values({ eventId, receivedAt: at }).onConflictDoNothing().returning({ id: table.eventId })).length > 0,
  };
}
