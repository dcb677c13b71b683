// The one orchestrator of deliveries. Events become delivery rows (the outbox) the moment they are
// received; a dispatcher claims due rows with a lease, signs and sends them (deliver.ts), records
// an attempt row, and moves each delivery to delivered, a later retry, or failed in one
// transaction. Rows outlive the process: after a restart, attempts cut short are recorded as
// interrupted and sent again, so nothing pending is lost.
//
// Order: deliveries that share an order key (one workspace, per registration) go out one at a time
// in the order they were received: only the oldest pending one of a key (its head) is sent, and the
// next becomes head when it is delivered or failed for good. Pings and redeliveries have no key.
import { and, desc, eq, inArray, isNotNull, isNull, lt, lte, or } from 'drizzle-orm';
import type { Bus } from '../../../platform/bus/bus';
import type { WorkspaceEventPayload, WORKSPACE_EVENTS } from '../../../platform/bus/subjects';
import { createEventInbox } from '../../../platform/bus/event-outbox';
import type { Db } from '../../../platform/db';
import { isoNow, newId, errorFields, type Clock, type Logger } from '../../../platform/runtime';
import type { Deliverer, SendResult } from './deliver';
import { prepareOutboxQueries } from './outbox.queries';
import { nextDelayMs, retryAfterMs } from './retry-schedule';
import { createTurns } from './turns';
import { deliveryHeaders } from './signer';
import type { WebhooksConfig } from './webhooks.config';
import { attempts, deliveries, eventInbox, registrations, type DeliveryRow, type DisabledReason, type RegistrationRow } from './webhooks.tables';

type WorkspaceSubject = (typeof WORKSPACE_EVENTS)[number];

export interface OutboxDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  config: WebhooksConfig;
  deliverer: Deliverer;
  /** Source of jitter, in [0, 1). */
  random?: () => number;
}

/** Longest wait between two looks at the table when nothing is due (another process may have added rows). */
const IDLE_POLL_MS = 1000;
/** Beyond the request's own time limit, how long a claimed delivery stays leased before another dispatcher may take it. */
const LEASE_MARGIN_MS = 10_000;
/** At shutdown, how long attempts in flight may take to finish; the rest are resent after the restart. */
const STOP_GRACE_MS = 5_000;

type Claimed = DeliveryRow & { url: string; secret: string };

/** The delivery body of a workspace event (the spec's payload: event, timestamp, workspace.id, workspace.status). */
export function workspaceEventBody(p: WorkspaceEventPayload): string {
  const { id, name, status, reason } = p.workspace;
  return JSON.stringify({ event: p.event, timestamp: p.timestamp, workspace: { id, name, status, ...(reason ? { reason } : {}) } });
}

const subscribes = (reg: RegistrationRow, event: string) => reg.events.includes('*') || reg.events.includes(event);

export function createOutbox(deps: OutboxDeps) {
  const { db, clock, log, config, deliverer } = deps;
  const random = deps.random ?? Math.random;
  const leaseMs = config.timeoutMs + LEASE_MARGIN_MS;

  const q = prepareOutboxQueries(db);
  const seen = createEventInbox({ db, table: eventInbox, clock });

  // ---- writing the outbox ------------------------------------------------------------------

  function insertDelivery(reg: Pick<RegistrationRow, 'id'>, event: string, body: string, orderKey: string | null): DeliveryRow {
    // A delivery is head of its key when nothing of that key is pending before it.
    const head = orderKey === null || q.pendingOfKey.get({ reg: reg.id, key: orderKey }) === undefined;
    return q.insertRow.get({
      id: newId('msg', clock),
      reg: reg.id,
      event,
      key: orderKey,
      head: head ? 1 : 0,
      payload: body,
      at: clock.now() + (nextDelayMs(config.retrySchedule, 0, random) ?? 0),
      createdAt: isoNow(clock),
    })!;
  }

  /**
   * One delivery per active registration that subscribes to `event` and may see the workspace of
   * `owner`, all in one transaction. Returns how many rows were written.
   */
  function enqueueEvent(event: string, owner: string, body: string, orderKey: string | null, except?: string): number {
    const targets = q.activeRegistrations.all().filter((r) => r.id !== except && (r.owner === owner || r.allWorkspaces) && subscribes(r, event));
    if (targets.length === 0) return 0;
    db.transaction(() => {
      for (const reg of targets) insertDelivery(reg, event, body, orderKey);
    });
    wake();
    return targets.length;
  }

  /** A delivery to one registration whatever it subscribes to (ping). */
  function enqueueTo(reg: RegistrationRow, event: string, body: string): DeliveryRow {
    const row = insertDelivery(reg, event, body, null);
    wake();
    return row;
  }

  /**
   * Sends a delivery again with the same id. An ended one is sent at once, outside the order (an
   * explicit request of its owner); a pending one keeps its place and is due now, in a new round.
   */
  function redeliver(seq: number): 'queued' | 'in-flight' {
    const now = clock.now();
    const free = or(isNull(deliveries.leaseUntil), lte(deliveries.leaseUntil, now));
    const res = db.transaction((tx) => {
      const d = tx.select().from(deliveries).where(eq(deliveries.seq, seq)).get();
      if (!d) return 0;
      const set = d.status === 'pending' ? { roundAttempts: 0, nextAttemptAt: now } : { status: 'pending' as const, orderKey: null, head: true, roundAttempts: 0, nextAttemptAt: now };
      return (tx.update(deliveries).set(set).where(and(eq(deliveries.seq, seq), free)).run() as unknown as { changes: number }).changes;
    });
    if (res === 0) return 'in-flight';
    wake();
    return 'queued';
  }

  /** Ends every pending delivery of a registration that no longer receives (disabled or turned off). */
  function failPending(registrationId: string, why: string) {
    db.update(deliveries)
      .set({ status: 'failed', head: false, lastError: why, leaseUntil: null })
      .where(and(eq(deliveries.registrationId, registrationId), eq(deliveries.status, 'pending')))
      .run();
  }

  // ---- the state machine ---------------------------------------------------------------------

  const turns = createTurns(config.hookConcurrency);

  /** Each registration with a pending head not in flight, and when that head is due. */
  function waiting(now: number): { reg: string; seq: number; at: number }[] {
    const out: { reg: string; seq: number; at: number }[] = [];
    let after = '';
    for (let r = q.nextRegistrationWithHeads.get({ after }); r; r = q.nextRegistrationWithHeads.get({ after })) {
      after = r.reg;
      const head = q.firstHeadOf.get({ reg: r.reg, now });
      if (head) out.push({ reg: r.reg, seq: head.seq, at: head.at });
    }
    return out;
  }

  /** Claims up to `limit` due deliveries, in turns: each gets a lease and its attempt is counted before it is sent. */
  function claim(limit: number): Claimed[] {
    const now = clock.now();
    const at = new Date(now).toISOString();
    const claimed = db.transaction(
      () => {
        const out: Claimed[] = [];
        const taken = new Map<string, number>();
        const queue = turns.order(waiting(now).filter((r) => r.at <= now)).map((r) => r.reg);
        // Round after round, one delivery per registration per round, until the slots or the due ones run out.
        while (out.length < limit && queue.length > 0) {
          const reg = queue.shift()!;
          const head = q.firstHeadOf.get({ reg, now });
          const row = head && head.at <= now ? q.lease.get({ seq: head.seq, now, until: now + leaseMs, at }) : undefined;
          const target = row && q.target.get({ id: reg });
          if (!row || !target) continue; // nothing else due for it
          out.push({ ...row, ...target });
          const n = (taken.get(reg) ?? 0) + 1;
          taken.set(reg, n);
          if (turns.hasRoom(reg, n)) queue.push(reg);
        }
        return out;
      },
      { behavior: 'immediate' },
    );
    for (const d of claimed) turns.took(d.registrationId);
    return claimed;
  }

  async function attempt(d: Claimed): Promise<void> {
    const startedAt = isoNow(clock);
    const headers = deliveryHeaders({
      secret: d.secret,
      deliveryId: d.id,
      event: d.event,
      body: d.payload,
      timestampSeconds: Math.floor(clock.now() / 1000),
    });
    const result = await deliverer.send({ url: d.url, headers, body: d.payload });
    if (closed) return; // the database is gone; the lease makes the next start send it again
    try {
      record(d, startedAt, result);
    } catch (e) {
      log.error('recording a webhook attempt failed', { delivery: d.id, ...errorFields(e) });
    }
  }

  /** The outcome of one attempt, written in one transaction; a registration disabled by it is reported after the commit. */
  function record(d: Claimed, startedAt: string, r: SendResult) {
    const now = clock.now();
    const at = new Date(now).toISOString();
    let disabled: { reg: RegistrationRow; reason: DisabledReason } | undefined;
    db.transaction((tx) => {
      const current = q.deliveryBySeq.get({ seq: d.seq });
      if (!current) return; // its registration was deleted meanwhile
      const reg = q.registrationById.get({ id: d.registrationId })!;
      q.insertAttempt.run({
        seq: d.seq,
        attempt: d.attempts,
        startedAt,
        durationMs: r.durationMs,
        responseStatus: r.status,
        error: r.error?.message ?? null,
        responseBody: r.bodySnippet || null,
      });
      const ok = r.status !== null && r.status >= 200 && r.status < 300;
      const fields = {
        seq: d.seq,
        responseStatus: r.status,
        lastError: ok ? null : (r.error?.message ?? `HTTP ${r.status}`),
        durationMs: r.durationMs,
      };
      const ended = () => {
        if (current.orderKey !== null) q.promoteNext.run({ reg: current.registrationId, key: current.orderKey });
      };
      if (ok) {
        q.markDelivered.run({ ...fields, at });
        ended();
        q.clearFailing.run({ id: reg.id });
        return;
      }
      const failingSince = reg.failingSince ?? now;
      let reason: DisabledReason | undefined;
      if (r.status === 410) reason = 'gone';
      else if (now - failingSince >= config.disableAfterMs) reason = 'failing';
      let delay = reason ? null : nextDelayMs(config.retrySchedule, current.roundAttempts, random);
      if (delay !== null && (r.status === 429 || r.status === 503)) delay = Math.max(delay, retryAfterMs(r.retryAfter, now) ?? 0);
      if (delay === null) {
        q.markFailed.run(fields);
        ended();
      } else q.markRetry.run({ ...fields, at: now + delay });
      if (reason && reg.active) {
        tx.update(registrations).set({ active: false, disabledReason: reason, disabledAt: at, failingSince, updatedAt: at }).where(eq(registrations.id, reg.id)).run();
        disabled = { reg, reason };
      } else if (reg.failingSince === null) {
        tx.update(registrations).set({ failingSince }).where(eq(registrations.id, reg.id)).run();
      }
    });
    if (disabled) onDisabled(disabled.reg, disabled.reason);
  }

  /** A registration the receiver (or time) turned off: its pending deliveries end, and its owner's other registrations hear of it. */
  function onDisabled(reg: RegistrationRow, reason: DisabledReason) {
    failPending(reg.id, 'the registration was disabled');
    log.warn('webhook registration disabled', { webhook: reg.id, reason });
    const body = JSON.stringify({ event: 'webhook.disabled', timestamp: isoNow(clock), webhook: { id: reg.id, reason } });
    enqueueEvent('webhook.disabled', reg.owner, body, null, reg.id);
  }

  let prunedAt = 0;
  /**
   * The log is bounded two ways, by a pass every APP_WEBHOOK_PRUNE_INTERVAL (and at start-up): ended
   * deliveries (delivered, failed) older than APP_WEBHOOK_RETENTION go, and so do those beyond the
   * newest APP_WEBHOOK_RETENTION_COUNT of each registration. Their attempts go with them (the foreign
   * key cascades). Pending deliveries are never pruned: what was said is kept until it is delivered.
   */
  function prune() {
    prunedAt = clock.now();
    const ended = inArray(deliveries.status, ['delivered', 'failed']);
    const before = new Date(prunedAt - config.retentionMs).toISOString();
    let removed = (db.delete(deliveries).where(and(ended, lt(deliveries.createdAt, before))).run() as unknown as { changes: number }).changes;
    const ids = db.select({ id: registrations.id }).from(registrations).all().map((r) => r.id);
    turns.keepOnly(new Set(ids));
    for (const id of ids) {
      const ofReg = and(eq(deliveries.registrationId, id), ended);
      // The newest ended delivery past the count; it and everything older of the registration go.
      const edge = db.select({ seq: deliveries.seq }).from(deliveries).where(ofReg).orderBy(desc(deliveries.seq)).limit(1).offset(config.retentionCount).get();
      if (edge) removed += (db.delete(deliveries).where(and(ofReg, lte(deliveries.seq, edge.seq))).run() as unknown as { changes: number }).changes;
    }
    if (removed > 0) log.info('pruned old webhook deliveries', { count: removed });
  }

  /** After a crash: attempts that were in flight are recorded as interrupted and become due at once. */
  function recoverInterrupted() {
    const now = clock.now();
    db.transaction((tx) => {
      const stuck = tx.select().from(deliveries).where(and(eq(deliveries.status, 'pending'), isNotNull(deliveries.leaseUntil))).all();
      for (const d of stuck) {
        tx.insert(attempts)
          .values({ deliverySeq: d.seq, attempt: d.attempts, startedAt: d.lastAttemptAt ?? isoNow(clock), durationMs: 0, responseStatus: null, error: 'interrupted: Keel stopped before the answer was recorded' })
          .run();
        // The interrupted try does not use up a step of the schedule: the receiver may never have seen it.
        tx.update(deliveries)
          .set({ leaseUntil: null, nextAttemptAt: now, roundAttempts: Math.max(0, d.roundAttempts - 1) })
          .where(eq(deliveries.seq, d.seq))
          .run();
      }
      if (stuck.length) log.info('resuming interrupted webhook deliveries', { count: stuck.length });
    });
  }

  // ---- the dispatcher loop -----------------------------------------------------------------

  let running = false;
  let closed = false;
  let unsubscribe: (() => void) | undefined;
  let pumping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const inFlight = new Set<Promise<void>>();

  let wakeQueued = false;
  /** Runs the loop once after the current I/O turn: attempts ending together are replaced by one claim. */
  function wake() {
    if (!running || wakeQueued) return;
    wakeQueued = true;
    setImmediate(() => {
      wakeQueued = false;
      pump();
    });
  }

  function pump() {
    if (!running || pumping) return;
    pumping = true;
    try {
      while (running && inFlight.size < config.concurrency) {
        const limit = config.concurrency - inFlight.size;
        const batch = claim(limit);
        for (const d of batch) {
          const p: Promise<void> = attempt(d).finally(() => {
            inFlight.delete(p);
            turns.done(d.registrationId);
            wake();
          });
          inFlight.add(p);
        }
        // Fewer than asked for: nothing else is due now (claiming again would only rescan).
        if (batch.length < limit) break;
      }
      schedule();
    } catch (e) {
      log.error('webhook dispatcher failed; trying again shortly', errorFields(e));
      schedule();
    } finally {
      pumping = false;
    }
  }

  /** Sleeps until the next head that waits only for its time (a retry), or the idle poll; with every slot busy, an ending attempt wakes the loop. */
  function schedule() {
    clearTimeout(timer);
    if (!running) return;
    if (clock.now() - prunedAt >= config.pruneIntervalMs) {
      try {
        prune();
      } catch (e) {
        log.error('pruning webhook deliveries failed', errorFields(e));
      }
    }
    let wait = IDLE_POLL_MS;
    if (inFlight.size < config.concurrency) {
      // The next registration with a free slot whose head waits only for its time; a full one is woken by its attempts ending.
      const now = clock.now();
      let next = Number.MAX_SAFE_INTEGER;
      for (const r of turns.order(waiting(now))) next = Math.min(next, r.at);
      if (next !== Number.MAX_SAFE_INTEGER) wait = Math.min(IDLE_POLL_MS, Math.max(next - now, 1));
    }
    timer = setTimeout(pump, wait);
  }

  return {
    enqueueEvent,
    enqueueTo,
    /** Pending deliveries of a registration (what APP_WEBHOOK_MAX_PENDING bounds). */
    pendingOf: (registrationId: string) => q.pendingCount.get({ reg: registrationId })?.n ?? 0,
    redeliver,
    failPending,
    /**
     * Turns evt.workspace.* into deliveries (called by start() before its first await). One durable
     * consumer keeps the events in order, at least once (on NATS from JetStream, those sent while this
     * service was down too); deliveries and event id share a transaction: a redelivery makes none.
     */
    listen(bus: Bus) {
      unsubscribe ??= bus.consume<WorkspaceSubject>('webhooks', 'evt.workspace.*', (p) => {
        seen.once(p.eventId, () => {
          enqueueEvent(p.event, p.owner, workspaceEventBody(p), `workspace:${p.workspace.id}`);
        });
      });
    },
    /** Resumes what a previous run left, then sends. */
    start() {
      recoverInterrupted();
      running = true;
      wake();
    },
    /** Stops claiming and waits (briefly) for attempts in flight to be recorded; the others keep their lease and are resent at start-up. */
    async stop() {
      unsubscribe?.();
      running = false;
      clearTimeout(timer);
      await Promise.race([Promise.allSettled([...inFlight]), Bun.sleep(Math.min(config.timeoutMs, STOP_GRACE_MS))]);
      closed = true;
      deliverer.close();
    },
    /** For tests and the benchmark: attempts in flight. */
    inFlight: () => inFlight.size,
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
