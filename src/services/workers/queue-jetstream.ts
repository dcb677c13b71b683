// The job queue on JetStream, used when the bus is NATS: workers on any machine that reaches the
// NATS server share it, with no shared database. Two stores on the server:
// - the work-queue stream KEEL_JOBS carries one message per job, on `keel.jobs.<tenant>`; a message
//   leaves the stream when a worker acknowledges it. The lease is the acknowledgement deadline
//   (ack_wait = APP_WORKERS_LEASE_MS): the heartbeat sends "in progress", and a worker that dies stops
//   sending it, so the server hands the message to another worker (redelivery). A retry is a
//   negative acknowledgement with the backoff as its delay.
// - the stream KEEL_JOBS_STATE holds each job's state (the same row as the database queue), one
//   record per subject changed only by compare-and-set on its revision (jetstream-state.ts), so a worker that lost the message to
//   another sees it (lease-lost) and a cancel from any process reaches the worker that runs it.
// Dedup by key: `pending.<sha256(key)>` is created atomically next to a queued job and removed when
// it is claimed; the stream message's Nats-Msg-Id is the job id, so a retried publish stores it once.
// Fairness: one durable consumer per tenant (work-queue streams take consumers on disjoint
// subjects); a claim takes the tenants with waiting messages in turn.
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { createHash } from 'node:crypto';
import type { Bus } from '../../platform/bus/bus';
import { parseBusUrl } from '../../platform/bus/nats';
import type { JobProgress, JobSubmission, JobView } from '../../platform/bus/subjects';
import { errorFields, newId, type Clock, type Logger } from '../../platform/runtime';
import { openStateStore } from './jetstream-state';
import { answerJobCommands, type JobQueue, type JobRow, type Outcome } from './queue';
import { checkSubmission, jobNotFound, toJobView } from './workers.service';

export const JOB_STREAM = 'KEEL_JOBS';
export const JOB_STATE_STREAM = 'KEEL_JOBS_STATE';
const SUBJECT_PREFIX = 'keel.jobs.';
const enc = new TextEncoder();
const dec = new TextDecoder();
const NS = 1e6; // nanoseconds per millisecond

export interface JetStreamQueueDeps {
  /** APP_BUS: the queue opens its own connection to the same server. */
  url: string;
  bus: Bus;
  clock: Clock;
  log: Logger;
  /** The acknowledgement deadline of the tenants' consumers: the lease. */
  leaseMs: number;
  /** How long finished jobs stay readable (default 7 days). */
  keepMs?: number;
  onSubmit: () => void;
}

/** The NATS server answers but has no JetStream (started without -js): the database queue may stand in. */
export class JetStreamUnavailable extends Error {
  constructor(override readonly cause: unknown) {
    super('the NATS server has no JetStream');
  }
}

/** A subject token for a tenant: hex, so any tenant name is one valid token. */
const tenantToken = (tenant: string) => createHash('sha256').update(tenant).digest('hex').slice(0, 32);
const pendingKey = (key: string) => `pending.${createHash('sha256').update(key).digest('hex')}`;
const jobKey = (id: string) => `job.${id}`;

/** A delivered message's acknowledgement subject: `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>...`. */
const deliveries = (reply: string) => Number(reply.split('.')[4] ?? 1);

export async function createJetStreamQueue(deps: JetStreamQueueDeps): Promise<JobQueue> {
  const { clock, log, leaseMs } = deps;
  const { servers, user, pass } = parseBusUrl(deps.url);
  const nc: NatsConnection = await connect({ servers, user, pass, name: 'keel-workers-queue', maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  let jsm: JetStreamManager;
  try {
    jsm = await jetstreamManager(nc, { timeout: 5000 });
  } catch (e) {
    await nc.close();
    throw new JetStreamUnavailable(e);
  }
  const js: JetStreamClient = jetstream(nc);
  const streamConfig = {
    name: JOB_STREAM,
    subjects: [`${SUBJECT_PREFIX}>`],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: 2 * 60 * 1e9,
  };
  try {
    await jsm.streams.info(JOB_STREAM);
  } catch (e) {
    if (!(e instanceof JetStreamApiError) || e.code !== 10059) throw e; // 10059: stream not found
    await jsm.streams.add(streamConfig).catch(async (e2) => {
      // Another worker made it in between.
      await jsm.streams.info(JOB_STREAM).catch(() => Promise.reject(e2));
    });
  }
  const state = await openStateStore(jsm, js, { stream: JOB_STATE_STREAM, prefix: 'keel.jobstate', keepMs: deps.keepMs ?? 7 * 24 * 3600_000 });

  /** The ack subject of each job this process holds. */
  const held = new Map<string, string>();
  const consumers = new Set<string>();
  let turn = 0;

  async function read(id: string): Promise<{ row: JobRow; rev: number } | undefined> {
    const r = await state.read(jobKey(id));
    return r && { row: JSON.parse(r.value) as JobRow, rev: r.rev };
  }

  /** Compare-and-set on the job's state: `change` sees the current row, answers the new one or nothing. */
  async function change(id: string, fn: (r: JobRow) => JobRow | undefined): Promise<JobRow | undefined> {
    for (let i = 0; i < 20; i++) {
      const cur = await read(id);
      if (!cur) return undefined;
      const next = fn(cur.row);
      if (!next) return undefined;
      if (await state.update(jobKey(id), JSON.stringify(next), cur.rev)) return next;
    }
    throw new Error('the job changed twenty times while this process tried to change it');
  }

  async function announce(row: JobRow | undefined) {
    if (!row) return;
    try {
      await deps.bus.publish('evt.workers.jobProgress', { job: toJobView(row), at: clock.now() });
    } catch (e) {
      log.warn('evt.workers.jobProgress not published', { jobId: row.id, ...errorFields(e) });
    }
  }

  /** Marks `row` as the pending job of its key; false when another queued job holds the key. */
  async function holdKey(row: JobRow): Promise<boolean> {
    if (row.key === null) return true;
    const k = pendingKey(row.key);
    for (;;) {
      if (await state.create(k, row.id)) return true;
      const e = await state.read(k);
      if (!e) continue; // removed in between: try again
      const other = await read(e.value);
      if (other && other.row.status === 'queued' && other.row.id !== row.id) return false;
      // A stale marker (its job was claimed or ended): take it over, unless it changed in between.
      if (await state.update(k, row.id, e.rev)) return true;
    }
  }

  async function releaseKey(row: JobRow) {
    if (row.key === null) return;
    const e = await state.read(pendingKey(row.key));
    // Conditional: a marker another job took over in between stays.
    if (e && e.value === row.id) await state.remove(pendingKey(row.key), e.rev);
  }

  async function submit(input: JobSubmission): Promise<{ job: JobView; deduplicated: boolean }> {
    const maxAttempts = checkSubmission(input);
    const now = clock.now();
    const row: JobRow = {
      id: newId('job', clock), type: input.type, key: input.key ?? null, payload: input.payload, status: 'queued', attempts: 0, maxAttempts,
      runAt: now, leaseOwner: null, leaseUntil: null, cancelRequested: false, progress: {}, error: null,
      createdAt: now, updatedAt: now, startedAt: null, finishedAt: null,
    };
    if (!(await state.create(jobKey(row.id), JSON.stringify(row)))) throw new Error('a job id was given twice');
    if (!(await holdKey(row))) {
      const mine = await state.read(jobKey(row.id));
      if (mine) await state.remove(jobKey(row.id), mine.rev);
      const e = await state.read(pendingKey(row.key!));
      const pending = e ? await read(e.value) : undefined;
      if (pending?.row.status === 'queued') return { job: toJobView(pending.row), deduplicated: true };
      return submit(input); // claimed in between: queue ours
    }
    const subject = SUBJECT_PREFIX + tenantToken(input.tenant ?? input.type);
    await js.publish(subject, enc.encode(JSON.stringify({ id: row.id })), { msgID: row.id });
    await announce(row);
    return { job: toJobView(row), deduplicated: false };
  }

  async function existing(id: unknown): Promise<JobRow> {
    const r = typeof id === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(id) ? await read(id) : undefined;
    if (!r) throw jobNotFound();
    return r.row;
  }

  async function cancel(id: string): Promise<JobView> {
    await existing(id);
    const now = clock.now();
    // A queued job ends here (its message is dropped by the worker that next takes it); a running
    // one is flagged and its worker stops it at the next heartbeat.
    const row = await change(id, (r) =>
      r.status === 'queued'
        ? { ...r, status: 'cancelled', finishedAt: now, updatedAt: now, error: 'cancelled' }
        : r.status === 'running'
          ? { ...r, cancelRequested: true, updatedAt: now }
          : undefined,
    );
    if (row?.status === 'cancelled') await releaseKey(row);
    await announce(row);
    return toJobView(row ?? (await existing(id)));
  }

  /** One message of a tenant's consumer, without waiting: a pull request with no_wait. */
  async function pull(token: string): Promise<Msg | undefined> {
    const name = `jobs_${token}`;
    if (!consumers.has(name)) {
      try {
        await jsm.consumers.add(JOB_STREAM, {
          durable_name: name,
          filter_subject: SUBJECT_PREFIX + token,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ack_wait: leaseMs * NS,
          max_deliver: -1,
        });
      } catch (e) {
        // Made by another worker, maybe with another lease: it is used as it is.
        if (!(e instanceof JetStreamApiError)) throw e;
      }
      consumers.add(name);
    }
    // A subscription of its own (noMux): the message comes on its own subject, which the shared
    // request inbox would not match. A short expiry rather than no_wait: nats-server 2.9 left one of
    // two no_wait pulls on one consumer unanswered when they came together (two workers).
    let m: Msg;
    try {
      m = await nc.request(`$JS.API.CONSUMER.MSG.NEXT.${JOB_STREAM}.${name}`, enc.encode(JSON.stringify({ batch: 1, expires: 200 * NS })), { timeout: 5000, noMux: true });
    } catch (e) {
      consumers.delete(name); // gone (a server that lost its store): made again at the next claim
      throw e;
    }
    // No message: a status reply (404 no messages, 408 expired) with no acknowledgement subject;
    // any other status (409: the consumer was deleted) makes it again at the next claim.
    if (m.headers && m.headers.code >= 300) {
      if (m.headers.code !== 404 && m.headers.code !== 408) consumers.delete(name);
      return undefined;
    }
    return m.reply ? m : undefined;
  }

  async function claimOne(msg: Msg, workerId: string): Promise<JobRow | undefined> {
    const reply = msg.reply!;
    const ack = () => nc.publish(reply, enc.encode('+ACK'));
    let id: string;
    try {
      id = JSON.parse(dec.decode(msg.data)).id;
    } catch {
      ack(); // not a job message: nothing can run it
      return undefined;
    }
    const now = clock.now();
    const wasQueued = { v: false };
    const row = await change(id, (r) => {
      if (r.status !== 'queued' && r.status !== 'running') return undefined;
      // A running job delivered again: its worker stopped acknowledging it (died or hung).
      wasQueued.v = r.status === 'queued';
      return { ...r, status: 'running', leaseOwner: workerId, leaseUntil: now + leaseMs, attempts: r.attempts + 1, startedAt: r.startedAt ?? now, updatedAt: now };
    });
    if (!row) {
      ack(); // ended (cancelled while queued) or gone
      return undefined;
    }
    held.set(id, reply);
    if (wasQueued.v) await releaseKey(row);
    if (row.attempts > row.maxAttempts) {
      await finish(id, workerId, { status: 'failed', error: `no worker finished the job in ${row.maxAttempts} attempts` });
      return undefined;
    }
    log.debug('job claimed', { jobId: id, deliveries: deliveries(reply) });
    await announce(row);
    return row;
  }

  async function claim(workerId: string): Promise<JobRow | undefined> {
    const info = await jsm.streams.info(JOB_STREAM, { subjects_filter: `${SUBJECT_PREFIX}>` });
    const tokens = Object.keys(info.state.subjects ?? {}).map((s) => s.slice(SUBJECT_PREFIX.length)).sort();
    // Tenants in turn, starting after the one served last.
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[(turn + i) % tokens.length]!;
      const msg = await pull(token);
      if (!msg) continue;
      turn = (turn + i + 1) % tokens.length;
      const row = await claimOne(msg, workerId);
      if (row) return row;
      return claim(workerId); // that message ended: look again
    }
    return undefined;
  }

  async function renew(id: string, workerId: string): Promise<{ held: boolean; cancelRequested: boolean }> {
    const cur = await read(id);
    const reply = held.get(id);
    if (!cur || !reply || cur.row.status !== 'running' || cur.row.leaseOwner !== workerId) return { held: false, cancelRequested: false };
    // "In progress" restarts the acknowledgement deadline: the lease, renewed.
    nc.publish(reply, enc.encode('+WPI'));
    await change(id, (r) => (r.leaseOwner === workerId ? { ...r, leaseUntil: clock.now() + leaseMs } : undefined));
    return { held: true, cancelRequested: cur.row.cancelRequested };
  }

  async function progress(id: string, workerId: string, figures: JobProgress) {
    const now = clock.now();
    await announce(await change(id, (r) => (r.status === 'running' && r.leaseOwner === workerId ? { ...r, progress: figures, updatedAt: now } : undefined)));
  }

  async function finish(id: string, workerId: string, outcome: Outcome): Promise<void> {
    const reply = held.get(id);
    held.delete(id);
    const now = clock.now();
    const mine = (r: JobRow) => r.status === 'running' && r.leaseOwner === workerId;
    const free = { leaseOwner: null, leaseUntil: null, updatedAt: now };
    let row: JobRow | undefined;
    let redeliverAfterMs: number | undefined; // undefined: the message is acknowledged (done with)
    if (outcome.status === 'released' || outcome.status === 'retry') {
      const cur = await read(id);
      if (!cur || !mine(cur.row)) return;
      const queued: JobRow =
        outcome.status === 'released'
          ? { ...cur.row, ...free, status: 'queued', runAt: now, attempts: cur.row.attempts - 1 }
          : { ...cur.row, ...free, status: 'queued', runAt: outcome.runAt, error: outcome.error };
      if (await holdKey(queued)) {
        row = await change(id, (r) => (mine(r) ? queued : undefined));
        redeliverAfterMs = Math.max(0, queued.runAt - now);
      } else {
        // A newer job with the same key is already queued: it does what this retry would have done.
        const error = `${outcome.status === 'retry' ? outcome.error : 'released'} (superseded by a pending job with the same key)`;
        row = await change(id, (r) => (mine(r) ? { ...r, ...free, status: 'failed', finishedAt: now, error } : undefined));
      }
    } else {
      const error = outcome.status === 'failed' ? outcome.error : outcome.status === 'cancelled' ? 'cancelled' : null;
      row = await change(id, (r) => (mine(r) ? { ...r, ...free, status: outcome.status, finishedAt: now, error } : undefined));
    }
    if (!row) return; // the lease went to another worker: its message is not ours to settle
    if (reply) {
      if (redeliverAfterMs === undefined) nc.publish(reply, enc.encode('+ACK'));
      else nc.publish(reply, enc.encode(`-NAK ${JSON.stringify({ delay: Math.round(redeliverAfterMs * NS) })}`));
    }
    await announce(row);
  }

  const get = async (id: string) => toJobView(await existing(id));
  return {
    submit,
    get,
    cancel,
    claim,
    renew,
    progress,
    finish,
    listen: (bus: Bus) => answerJobCommands(bus, { submit, cancel, get }, deps.onSubmit),
    async close() {
      await nc.drain().catch(() => nc.close());
    },
  };
}
