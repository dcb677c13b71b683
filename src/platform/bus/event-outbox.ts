// Durable events (transactional outbox): the event is written as a row in the same database
// transaction as the state change it reports, and a relay publishes unsent rows in order and marks
// them sent once the bus took them (on NATS: once JetStream stored them). A crash between commit and
// publish, or a bus that is down, delays an event and never loses it; a resend after a crash carries
// the same event id, so JetStream drops it as a duplicate and consumers act once per id anyway.
import type { Orm, Store } from '../store';
import { errorFields, newId, type Clock, type Logger } from '../runtime';
import type { Bus, DurableSubject } from './bus';
import type { BusEvents } from './subjects';
import type { EventInboxTable, EventOutboxTable } from './outbox-table';
import { createInboxRows, createOutboxRows, type OutboxTx } from './event-outbox.repository';

/** Rows relayed per pass. */
const BATCH = 100;
/** Look at the table this often even when nobody kicked (another process may have written rows; a failed pass retries). */
const POLL_MS = 1000;
/** Sent rows are kept this long (for inspection), then removed. */
const KEEP_SENT_MS = 24 * 3600_000;

export type WithoutEventId<T> = Omit<T, 'eventId'>;

/** `db`: the service's Store orm (SQLite or PostgreSQL). */
export function createEventOutbox(deps: { db: Orm; table: EventOutboxTable; bus: Bus; clock: Clock; log: Logger }) {
  const { bus, clock, log } = deps;
  const outbox = createOutboxRows(deps.db, deps.table);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let passing: Promise<void> | undefined;
  let again = false;

  /** Sends unsent rows in order until none is left; a failure stops the pass (the rows stay for the next). */
  async function pass(): Promise<void> {
    for (;;) {
      const rows = await outbox.unsent(BATCH);
      if (rows.length === 0) return;
      // Handed to the bus in order (one connection keeps it); each resolves when the bus took it.
      const results = await Promise.allSettled(rows.map((r) => bus.publish(r.subject as DurableSubject, JSON.parse(r.payload), { untilStored: true })));
      const firstFailed = results.findIndex((r) => r.status === 'rejected');
      const sent = (firstFailed === -1 ? rows : rows.slice(0, firstFailed)).map((r) => r.seq);
      if (sent.length) await outbox.markSent(sent, clock.now());
      if (firstFailed !== -1) throw (results[firstFailed] as PromiseRejectedResult).reason;
    }
  }

  function kick() {
    if (!running) return;
    if (passing) {
      again = true;
      return;
    }
    clearTimeout(timer);
    passing = pass()
      .catch((e) => log.warn('durable events not published yet; retrying', errorFields(e)))
      .finally(() => {
        passing = undefined;
        if (!running) return;
        if (again) {
          again = false;
          return kick();
        }
        timer = setTimeout(kick, POLL_MS);
      });
  }

  /** The row of a new event, and the payload that will be published. */
  function eventRow<S extends DurableSubject>(subject: S, payload: WithoutEventId<BusEvents[S]>) {
    const eventId = newId('evt', clock);
    const full = { eventId, ...payload } as BusEvents[S];
    return { full, row: { eventId, subject, payload: JSON.stringify(full), createdAt: clock.now() } };
  }

  return {
    /**
     * Writes `payload` (given an event id) as an unsent event of `subject` through `tx`, the caller's
     * transaction (store.transaction), and returns what will be published. Call kick() once it committed.
     */
    async record<S extends DurableSubject>(tx: OutboxTx, subject: S, payload: WithoutEventId<BusEvents[S]>): Promise<BusEvents[S]> {
      const { full, row } = eventRow(subject, payload);
      await outbox.insert(tx, row);
      return full;
    },
    /** Relays what is unsent now (after a commit). */
    kick,
    /** Relays what a previous run left, then keeps relaying. */
    start() {
      running = true;
      outbox.pruneSent(clock.now() - KEEP_SENT_MS).catch((e) =>
        log.warn('sent events not pruned', errorFields(e)),
      );
      kick();
    },
    /** Stops relaying; a pass under way finishes (rows it could not send wait for the next start). */
    async stop() {
      running = false;
      clearTimeout(timer);
      await passing;
    },
  };
}

export type EventOutbox = ReturnType<typeof createEventOutbox>;

/** Event ids are remembered a day longer than JetStream keeps events (7 days): no redelivery can come after that. */
const KEEP_SEEN_MS = 8 * 24 * 3600_000;
/** How often old event ids are removed (checked on each event; no timer to stop). */
const PRUNE_SEEN_EVERY_MS = 3600_000;

/**
 * Idempotent consumption: `once(eventId, effect)` runs `effect` with its writes in one transaction
 * (store.transaction) with the record of the event id, so an event delivered twice (at least once)
 * acts once; it resolves to false for a duplicate. Calls run one at a time, in the order they were
 * made, so effects happen in the order the events came. Ids older than the stream's retention are
 * forgotten.
 */
export function createEventInbox(deps: { store: Store; table: EventInboxTable; clock: Clock }) {
  const { store, clock } = deps;
  const seen = createInboxRows(deps.table);
  let prunedAt = 0;
  let queue: Promise<unknown> = Promise.resolve();

  async function run(eventId: string | undefined, effect: (tx: Orm) => Promise<void>): Promise<boolean> {
    const now = clock.now();
    const prune = now - prunedAt >= PRUNE_SEEN_EVERY_MS;
    if (prune) prunedAt = now;
    return store.transaction(async (tx) => {
      if (prune) await seen.pruneBefore(tx, now - KEEP_SEEN_MS);
      if (eventId !== undefined && !(await seen.seen(tx, eventId, now))) return false;
      await effect(tx);
      return true;
    });
  }

  return {
    once(eventId: string | undefined, effect: (tx: Orm) => Promise<void>): Promise<boolean> {
      const result = queue.then(() => run(eventId, effect));
      queue = result.catch(() => undefined);
      return result;
    },
  };
}
