// The one orchestrator of deliveries. Events become delivery rows (the outbox) the moment they are
// received; a dispatcher claims due rows with a lease, signs and sends them (deliver.ts), records
// an attempt row, and moves each delivery to delivered, a later retry, or failed in one
// transaction. Rows outlive the process: after a restart, attempts cut short are recorded as
// interrupted and sent again, so nothing pending is lost.
//
// Order: deliveries that share an order key (one workspace, per registration) go out one at a time
// in the order they were received: only the oldest pending one of a key (its head) is sent, and the
// next becomes head when it is delivered or failed for good. Pings and redeliveries have no key.
import type { Bus } from '../../../platform/bus/bus';
import type { WorkspaceEventPayload, WORKSPACE_EVENTS } from '../../../platform/bus/subjects';
import { createEventInbox } from '../../../platform/bus/event-outbox';
import type { Orm, Store } from '../../../platform/store';
import { isoNow, newId, errorFields, type Clock, type Logger } from '../../../platform/runtime';
import type { Deliverer, SendResult } from './deliver';
import type { WebhooksRepository } from './webhooks.repository';
import { nextDelayMs, retryAfterMs } from './retry-schedule';
import { createTurns } from './turns';
import { deliveryHeaders } from './signer';
import type { WebhooksConfig } from './webhooks.config';
import { webhooksTables, type DeliveryRow, type DisabledReason, type RegistrationRow } from './webhooks.tables';

type WorkspaceSubject = (typeof WORKSPACE_EVENTS)[number];

export interface OutboxDeps {
  store: Store;
  repository: WebhooksRepository;
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

/** A check run in the transaction of a write it guards (the pending quota of pings and redeliveries); throws to refuse. */
export type Admit = (tx: Orm) => Promise<void>;

/** The delivery body of a workspace event (the spec's payload: event, timestamp, workspace.id, workspace.status). */
export function workspaceEventBody(p: WorkspaceEventPayload): string {
  const { id, name, status, reason } = p.workspace;
  return JSON.stringify({ event: p.event, timestamp: p.timestamp, workspace: { id, name, status, ...(reason ? { reason } : {}) } });
}

const subscribes = (reg: RegistrationRow, event: string) => reg.events.includes('*') || reg.events.includes(event);

export function createOutbox(deps: OutboxDeps) {
  const { store, clock, log, config, deliverer } = deps;
  const random = deps.random ?? Math.random;
  const leaseMs = config.timeoutMs + LEASE_MARGIN_MS;
  const { eventInbox } = webhooksTables(store.dialect);

  const q = deps.repository;
  const seen = createEventInbox({ store, table: eventInbox, clock });

  // ---- writing the outbox ------------------------------------------------------------------

  async function insertDelivery(tx: Orm, registrationId: string, event: string, body: string, orderKey: string | null): Promise<DeliveryRow> {
    // A delivery is head of its key when nothing of that key is pending before it.
    if (orderKey !== null) await q.lockOrder(tx, registrationId, orderKey);
    const head = orderKey === null || (await q.pendingOfKey(registrationId, orderKey, tx)) === undefined;
    return q.insertDelivery({
      id: newId('msg', clock),
      reg: registrationId,
      event,
      key: orderKey,
      head,
      payload: body,
      at: clock.now() + (nextDelayMs(config.retrySchedule, 0, random) ?? 0),
      createdAt: isoNow(clock),
    }, tx);
  }

  /**
   * One delivery per active registration that subscribes to `event` and may see the workspace of
   * `owner`, written through `tx`. Returns how many rows were written.
   */
  async function writeEvent(tx: Orm, event: string, owner: string, body: string, orderKey: string | null, except?: string): Promise<number> {
    const targets = (await q.activeRegistrations(tx)).filter((r) => r.id !== except && (r.owner === owner || r.allWorkspaces) && subscribes(r, event));
    for (const reg of targets) await insertDelivery(tx, reg.id, event, body, orderKey);
    return targets.length;
  }

  /** writeEvent() in a transaction of its own; the dispatcher is woken once it committed. */
  async function enqueueEvent(event: string, owner: string, body: string, orderKey: string | null, except?: string): Promise<number> {
    const n = await q.transaction((tx) => writeEvent(tx, event, owner, body, orderKey, except));
    if (n > 0) wake();
    return n;
  }

  /** A delivery to one registration whatever it subscribes to (ping), written only if `admit` lets it. */
  async function enqueueTo(reg: Pick<RegistrationRow, 'id'>, event: string, body: string, admit?: Admit): Promise<DeliveryRow> {
    const row = await q.transaction(async (tx) => {
      await admit?.(tx);
      return insertDelivery(tx, reg.id, event, body, null);
    });
    wake();
    return row;
  }

  /**
   * Sends a delivery again with the same id. An ended one is sent at once, outside the order (an
   * explicit request of its owner), if `admit` lets it; a pending one keeps its place and is due now,
   * in a new round.
   */
  async function redeliver(seq: number, admit?: Admit): Promise<'queued' | 'in-flight'> {
    const now = clock.now();
    const res = await q.transaction(async (tx) => {
      const d = await q.deliveryBySeq(seq, tx);
      if (!d) return false;
      if (d.status !== 'pending') await admit?.(tx);
      // Conditional: an attempt in flight (its lease) leaves the row as it is.
      return q.requeue(seq, d.status === 'pending', now, tx);
    });
    if (!res) return 'in-flight';
    wake();
    return 'queued';
  }

  /** Ends every pending delivery of a registration that no longer receives (disabled or turned off). */
  async function failPending(registrationId: string, why: string) {
    await q.transaction((tx) => q.failPending(registrationId, why, tx));
  }

  // ---- the state machine ---------------------------------------------------------------------

  const turns = createTurns(config.hookConcurrency);

  /** Each registration with a pending head not in flight, and when that head is due. */
  async function waiting(db: Orm | undefined, now: number): Promise<{ reg: string; seq: number; at: number }[]> {
    const out: { reg: string; seq: number; at: number }[] = [];
    let after = '';
    for (let r = await q.nextRegistrationWithHeads(after, db); r; r = await q.nextRegistrationWithHeads(after, db)) {
      after = r.reg;
      const head = await q.firstHeadOf(r.reg, now, db);
      if (head) out.push({ reg: r.reg, seq: head.seq, at: head.at });
    }
    return out;
  }

  /**
   * Claims up to `limit` due deliveries, in turns: each gets a lease and its attempt is counted before
   * it is sent. Each lease is one conditional UPDATE ... RETURNING, so a delivery another dispatcher
   * took meanwhile is passed over, never taken twice; the transaction makes the batch one commit.
   */
  async function claim(limit: number): Promise<Claimed[]> {
    const now = clock.now();
    const at = new Date(now).toISOString();
    const claimed = await q.transaction(async (tx) => {
      const out: Claimed[] = [];
      const taken = new Map<string, number>();
      const queue = turns.order((await waiting(tx, now)).filter((r) => r.at <= now)).map((r) => r.reg);
      // Round after round, one delivery per registration per round, until the slots or the due ones run out.
      while (out.length < limit && queue.length > 0) {
        const reg = queue.shift()!;
        const head = await q.firstHeadOf(reg, now, tx);
        const row = head && head.at <= now ? await q.lease({ seq: head.seq, now, until: now + leaseMs, at }, tx) : undefined;
        const target = row && (await q.target(reg, tx));
        if (!row || !target) continue; // nothing else due for it
        out.push({ ...row, ...target });
        const n = (taken.get(reg) ?? 0) + 1;
        taken.set(reg, n);
        if (turns.hasRoom(reg, n)) queue.push(reg);
      }
      return out;
    });
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
      await record(d, startedAt, result);
    } catch (e) {
      log.error('recording a webhook attempt failed', { delivery: d.id, ...errorFields(e) });
    }
  }

  /** The outcome of one attempt, written in one transaction; a registration disabled by it is reported after the commit. */
  async function record(d: Claimed, startedAt: string, r: SendResult) {
    const now = clock.now();
    const at = new Date(now).toISOString();
    const disabled = await q.transaction(async (tx): Promise<{ reg: RegistrationRow; reason: DisabledReason } | undefined> => {
      // A pending delivery's key does not change: the lease's copy names it.
      if (d.orderKey !== null) await q.lockOrder(tx, d.registrationId, d.orderKey);
      const current = await q.deliveryBySeq(d.seq, tx);
      if (!current) return undefined; // its registration was deleted meanwhile
      const reg = (await q.registrationById(d.registrationId, tx))!;
      await q.insertAttempt({
        seq: d.seq,
        attempt: d.attempts,
        startedAt,
        durationMs: r.durationMs,
        responseStatus: r.status,
        error: r.error?.message ?? null,
        responseBody: r.bodySnippet || null,
      }, tx);
      const ok = r.status !== null && r.status >= 200 && r.status < 300;
      const fields = {
        responseStatus: r.status,
        lastError: ok ? null : (r.error?.message ?? `HTTP ${r.status}`),
        durationMs: r.durationMs,
      };
      const ended = async () => {
        if (current.orderKey !== null) await q.promoteNext(current.registrationId, current.orderKey, tx);
      };
      if (ok) {
        await q.markOutcome(d.seq, fields, { status: 'delivered', at }, tx);
        await ended();
        await q.clearFailing(reg.id, tx);
        return undefined;
      }
      const failingSince = reg.failingSince ?? now;
      let reason: DisabledReason | undefined;
      if (r.status === 410) reason = 'gone';
      else if (now - failingSince >= config.disableAfterMs) reason = 'failing';
      let delay = reason ? null : nextDelayMs(config.retrySchedule, current.roundAttempts, random);
      if (delay !== null && (r.status === 429 || r.status === 503)) delay = Math.max(delay, retryAfterMs(r.retryAfter, now) ?? 0);
      if (delay === null) {
        await q.markOutcome(d.seq, fields, { status: 'failed' }, tx);
        await ended();
      } else await q.markOutcome(d.seq, fields, { status: 'retry', at: now + delay }, tx);
      if (reason && reg.active) {
        await q.disableRegistration(reg.id, { reason, at, failingSince }, tx);
        return { reg, reason };
      }
      if (reg.failingSince === null) await q.markFailing(reg.id, failingSince, tx);
      return undefined;
    });
    if (disabled) await onDisabled(disabled.reg, disabled.reason);
  }

  /** A registration the receiver (or time) turned off: its pending deliveries end, and its owner's other registrations hear of it. */
  async function onDisabled(reg: RegistrationRow, reason: DisabledReason) {
    await failPending(reg.id, 'the registration was disabled');
    log.warn('webhook registration disabled', { webhook: reg.id, reason });
    const body = JSON.stringify({ event: 'webhook.disabled', timestamp: isoNow(clock), webhook: { id: reg.id, reason } });
    await enqueueEvent('webhook.disabled', reg.owner, body, null, reg.id);
  }

  let prunedAt = 0;
  /**
   * The log is bounded two ways, by a pass every APP_WEBHOOK_PRUNE_INTERVAL (and at start-up): ended
   * deliveries (delivered, failed) older than APP_WEBHOOK_RETENTION go, and so do those beyond the
   * newest APP_WEBHOOK_RETENTION_COUNT of each registration. Their attempts go with them (the foreign
   * key cascades). Pending deliveries are never pruned: what was said is kept until it is delivered.
   */
  async function prune() {
    prunedAt = clock.now();
    let removed = await q.pruneEndedBefore(new Date(prunedAt - config.retentionMs).toISOString());
    const ids = await q.registrationIds();
    turns.keepOnly(new Set(ids));
    for (const id of ids) removed += await q.pruneBeyond(id, config.retentionCount);
    if (removed > 0) log.info('pruned old webhook deliveries', { count: removed });
  }

  /** After a crash: attempts that were in flight are recorded as interrupted and become due at once. */
  async function recoverInterrupted() {
    const now = clock.now();
    const count = await q.transaction(async (tx) => {
      const stuck = await q.leased(tx);
      for (const d of stuck) {
        await q.insertAttempt(
          { seq: d.seq, attempt: d.attempts, startedAt: d.lastAttemptAt ?? isoNow(clock), durationMs: 0, responseStatus: null, error: 'interrupted: Keel stopped before the answer was recorded', responseBody: null },
          tx,
        );
        // The interrupted try does not use up a step of the schedule: the receiver may never have seen it.
        await q.releaseLease(d.seq, { now, roundAttempts: Math.max(0, d.roundAttempts - 1) }, tx);
      }
      return stuck.length;
    });
    if (count) log.info('resuming interrupted webhook deliveries', { count });
  }

  // ---- the dispatcher loop -----------------------------------------------------------------

  let running = false;
  let closed = false;
  let unsubscribe: (() => void) | undefined;
  /** The pass of the loop under way; a wake during it asks for another (`again`). */
  let pumping: Promise<void> | undefined;
  let again = false;
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
    if (!running) return;
    if (pumping) {
      again = true;
      return;
    }
    pumping = (async () => {
      do {
        again = false;
        await pass();
      } while (again && running);
    })().finally(() => {
      pumping = undefined;
    });
  }

  /** Fills the free slots with due deliveries, then sleeps until the next one is due. */
  async function pass() {
    try {
      while (running && inFlight.size < config.concurrency) {
        const limit = config.concurrency - inFlight.size;
        const batch = await claim(limit);
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
    } catch (e) {
      log.error('webhook dispatcher failed; trying again shortly', errorFields(e));
    }
    try {
      await schedule();
    } catch (e) {
      log.error('webhook dispatcher failed; trying again shortly', errorFields(e));
      clearTimeout(timer);
      if (running) timer = setTimeout(pump, IDLE_POLL_MS);
    }
  }

  /** Sleeps until the next head that waits only for its time (a retry), or the idle poll; with every slot busy, an ending attempt wakes the loop. */
  async function schedule() {
    clearTimeout(timer);
    if (!running) return;
    if (clock.now() - prunedAt >= config.pruneIntervalMs) {
      try {
        await prune();
      } catch (e) {
        log.error('pruning webhook deliveries failed', errorFields(e));
      }
    }
    let wait = IDLE_POLL_MS;
    if (inFlight.size < config.concurrency) {
      // The next registration with a free slot whose head waits only for its time; a full one is woken by its attempts ending.
      const now = clock.now();
      let next = Number.MAX_SAFE_INTEGER;
      for (const r of turns.order(await waiting(undefined, now))) next = Math.min(next, r.at);
      if (next !== Number.MAX_SAFE_INTEGER) wait = Math.min(IDLE_POLL_MS, Math.max(next - now, 1));
    }
    clearTimeout(timer);
    if (running) timer = setTimeout(pump, wait);
  }

  return {
    enqueueEvent,
    enqueueTo,
    /** Pending deliveries of a registration (what APP_WEBHOOK_MAX_PENDING bounds), read through `tx` when given. */
    pendingOf: (registrationId: string, tx?: Orm) => q.pendingCount(registrationId, tx),
    redeliver,
    failPending,
    /**
     * Turns evt.workspace.* into deliveries (called by start() before its first await). One durable
     * consumer keeps the events in order, at least once (on NATS from JetStream, those sent while this
     * service was down too); deliveries and event id share a transaction: a redelivery makes none.
     */
    listen(bus: Bus) {
      unsubscribe ??= bus.consume<WorkspaceSubject>('webhooks', 'evt.workspace.*', async (p) => {
        let written = 0;
        await seen.once(p.eventId, async (tx) => {
          written = await writeEvent(tx, p.event, p.owner, workspaceEventBody(p), `workspace:${p.workspace.id}`);
        });
        if (written > 0) wake();
      });
    },
    /** Resumes what a previous run left, then sends. */
    async start() {
      await recoverInterrupted();
      running = true;
      wake();
    },
    /** Stops claiming and waits (briefly) for attempts in flight to be recorded; the others keep their lease and are resent at start-up. */
    async stop() {
      unsubscribe?.();
      running = false;
      clearTimeout(timer);
      // A claim under way ends first: what it leased is in flight below, or resent after the restart.
      await pumping;
      await Promise.race([Promise.allSettled([...inFlight]), Bun.sleep(Math.min(config.timeoutMs, STOP_GRACE_MS))]);
      closed = true;
      deliverer.close();
    },
    /** For tests and the benchmark: attempts in flight. */
    inFlight: () => inFlight.size,
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
