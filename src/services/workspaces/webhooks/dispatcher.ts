// The outbox's dispatcher: claims due deliveries with a lease, signs and sends them (deliver.ts),
// records an attempt row, and moves each delivery to delivered, a later retry, or failed in one
// transaction. Rows outlive the process: after a restart, attempts cut short are recorded as
// interrupted and sent again, so nothing pending is lost. What it sends, the intake (intake.ts) wrote.
//
// Order: only the head of an order key is sent; when a head is delivered or failed for good, the
// next pending delivery of its key becomes head in the same transaction.
import { isoNow, errorFields, type Clock, type Logger } from '../../../platform/runtime';
import type { Orm } from '../../../platform/store';
import type { Deliverer, SendResult } from './deliver';
import type { Intake } from './intake';
import { nextDelayMs, retryAfterMs } from './retry-schedule';
import { deliveryHeaders } from './signer';
import { createTurns, type Turns } from './turns';
import type { WebhooksConfig } from './webhooks.config';
import type { WebhooksRepository } from './webhooks.repository';
import type { DeliveryRow, DisabledReason, RegistrationRow } from './webhooks.tables';

export interface DispatcherDeps {
  repository: WebhooksRepository;
  clock: Clock;
  log: Logger;
  config: WebhooksConfig;
  deliverer: Deliverer;
  /** Source of jitter, in [0, 1). */
  random: () => number;
  /** Where a webhook the dispatcher disabled has its pending deliveries ended and its notice written. */
  intake: Pick<Intake, 'disabled'>;
}

/** Longest wait between two looks at the table when nothing is due (another process may have added rows). */
const IDLE_POLL_MS = 1000;
/** Beyond the request's own time limit, how long a claimed delivery stays leased before another dispatcher may take it. */
const LEASE_MARGIN_MS = 10_000;
/** At shutdown, how long attempts in flight may take to finish; the rest are resent after the restart. */
const STOP_GRACE_MS = 5_000;

type Claimed = DeliveryRow & { url: string; secret: string };

/** What the steps below share: the dependencies and the turns between registrations (turns.ts). */
type Ctx = DispatcherDeps & { turns: Turns };

export function createDispatcher(deps: DispatcherDeps) {
  const { clock, log, config, deliverer } = deps;
  const ctx: Ctx = { ...deps, turns: createTurns(config.hookConcurrency) };
  let running = false;
  let closed = false;
  let prunedAt = 0;
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
        const batch = await claim(ctx, limit);
        for (const d of batch) {
          const p: Promise<void> = attempt(d).finally(() => {
            inFlight.delete(p);
            ctx.turns.done(d.registrationId);
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

  async function attempt(d: Claimed): Promise<void> {
    const startedAt = isoNow(clock);
    const headers = deliveryHeaders({ secret: d.secret, deliveryId: d.id, event: d.event, body: d.payload, timestampSeconds: Math.floor(clock.now() / 1000) });
    const result = await deliverer.send({ url: d.url, headers, body: d.payload });
    if (closed) return; // the database is gone; the lease makes the next start send it again
    try {
      const disabled = await record(ctx, d, startedAt, result);
      if (disabled) {
        log.warn('webhook registration disabled', { webhook: disabled.reg.id, reason: disabled.reason });
        await deps.intake.disabled(disabled.reg, disabled.reason);
      }
    } catch (e) {
      log.error('recording a webhook attempt failed', { delivery: d.id, ...errorFields(e) });
    }
  }

  /** Sleeps until the next head that waits only for its time (a retry), or the idle poll; with every slot busy, an ending attempt wakes the loop. */
  async function schedule() {
    clearTimeout(timer);
    if (!running) return;
    if (clock.now() - prunedAt >= config.pruneIntervalMs) {
      prunedAt = clock.now();
      try {
        await prune(ctx, prunedAt);
      } catch (e) {
        log.error('pruning webhook deliveries failed', errorFields(e));
      }
    }
    let wait = IDLE_POLL_MS;
    if (inFlight.size < config.concurrency) {
      // The next registration with a free slot whose head waits only for its time; a full one is woken by its attempts ending.
      const now = clock.now();
      let next = Number.MAX_SAFE_INTEGER;
      for (const r of ctx.turns.order(await waiting(ctx, now))) next = Math.min(next, r.at);
      if (next !== Number.MAX_SAFE_INTEGER) wait = Math.min(IDLE_POLL_MS, Math.max(next - now, 1));
    }
    clearTimeout(timer);
    if (running) timer = setTimeout(pump, wait);
  }

  return {
    /** Something was written or ended: look for due deliveries after the current I/O turn. */
    wake,
    /** Resumes what a previous run left, then sends. */
    async start() {
      await recoverInterrupted(ctx);
      running = true;
      wake();
    },
    /** Stops claiming and waits (briefly) for attempts in flight to be recorded; the others keep their lease and are resent at start-up. */
    async stop() {
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

export type Dispatcher = ReturnType<typeof createDispatcher>;

/** Each registration with a pending head not in flight, and when that head is due. */
async function waiting({ repository: q }: Ctx, now: number, db?: Orm): Promise<{ reg: string; seq: number; at: number }[]> {
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
async function claim(ctx: Ctx, limit: number): Promise<Claimed[]> {
  const { repository: q, turns } = ctx;
  const now = ctx.clock.now();
  const at = new Date(now).toISOString();
  const leaseMs = ctx.config.timeoutMs + LEASE_MARGIN_MS;
  const claimed = await q.transaction(async (tx) => {
    const out: Claimed[] = [];
    const taken = new Map<string, number>();
    const queue = turns.order((await waiting(ctx, now, tx)).filter((r) => r.at <= now)).map((r) => r.reg);
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

/** The outcome of one attempt, written in one transaction; returns the registration it disabled, if any (reported after the commit). */
async function record(ctx: Ctx, d: Claimed, startedAt: string, r: SendResult): Promise<{ reg: RegistrationRow; reason: DisabledReason } | undefined> {
  const { repository: q, config } = ctx;
  const now = ctx.clock.now();
  const at = new Date(now).toISOString();
  return q.transaction(async (tx) => {
    // A pending delivery's key does not change: the lease's copy names it.
    if (d.orderKey !== null) await q.lockOrder(tx, d.registrationId, d.orderKey);
    const current = await q.deliveryBySeq(d.seq, tx);
    if (!current) return undefined; // its registration was deleted meanwhile
    const reg = (await q.registrationById(d.registrationId, tx))!;
    await q.insertAttempt(
      { seq: d.seq, attempt: d.attempts, startedAt, durationMs: r.durationMs, responseStatus: r.status, error: r.error?.message ?? null, responseBody: r.bodySnippet || null },
      tx,
    );
    const ok = r.status !== null && r.status >= 200 && r.status < 300;
    const fields = { responseStatus: r.status, lastError: ok ? null : (r.error?.message ?? `HTTP ${r.status}`), durationMs: r.durationMs };
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
    let delay = reason ? null : nextDelayMs(config.retrySchedule, current.roundAttempts, ctx.random);
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
}

/**
 * The log is bounded two ways, by a pass every APP_WEBHOOK_PRUNE_INTERVAL (and at start-up): ended
 * deliveries (delivered, failed) older than APP_WEBHOOK_RETENTION go, and so do those beyond the
 * newest APP_WEBHOOK_RETENTION_COUNT of each registration. Their attempts go with them (the foreign
 * key cascades). Pending deliveries are never pruned: what was said is kept until it is delivered.
 */
async function prune({ repository: q, config, turns, log }: Ctx, now: number) {
  let removed = await q.pruneEndedBefore(new Date(now - config.retentionMs).toISOString());
  const ids = await q.registrationIds();
  turns.keepOnly(new Set(ids));
  for (const id of ids) removed += await q.pruneBeyond(id, config.retentionCount);
  if (removed > 0) log.info('pruned old webhook deliveries', { count: removed });
}

/** After a crash: attempts that were in flight are recorded as interrupted and become due at once. */
async function recoverInterrupted({ repository: q, clock, log }: Ctx) {
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
