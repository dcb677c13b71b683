// The job queue in the database (SQLite or PostgreSQL, platform/store/store.ts): submit (deduplicated by
// key), cancel from any process, claim under a lease, renew it, and record how an attempt ended.
// Processes sharing the database share the jobs. Every state change is published as
// evt.workers.jobProgress after its commit.
import type { Bus } from '../../platform/bus/bus';
import { JOB_TYPES, type JobProgress, type JobStatus, type JobSubmission, type JobView } from '../../platform/bus/subjects';
import { WorkersErrors } from './workers.errors';
import { errorFields, newId, type Clock, type Logger } from '../../platform/runtime';
import type { Store } from '../../platform/store';
import { answerJobCommands, type JobQueue, type JobRow, type Outcome } from './queue';
import { createWorkersRepository } from './workers.repository';

export type { JobRow } from './queue';

export const jobNotFound = () => WorkersErrors.WORKERS_JOB_NOT_FOUND('No such job');
export const badJob = (why: string) => WorkersErrors.WORKERS_JOB_INVALID(`The job is refused: ${why}`);

export const DEFAULT_MAX_ATTEMPTS = 3;

/** The one view of a job, on the bus and in events. */
export function toJobView(r: JobRow): JobView {
  return {
    id: r.id,
    type: r.type as JobView['type'],
    key: r.key,
    status: r.status as JobStatus,
    attempts: r.attempts,
    maxAttempts: r.maxAttempts,
    progress: r.progress,
    error: r.error,
    cancelRequested: r.cancelRequested,
    createdAt: r.createdAt,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    payload: r.payload as JobView['payload'],
  };
}

/** Refuses a submission off the bus that is not one (both queues); answers its maxAttempts. */
export function checkSubmission(input: JobSubmission): number {
  if (!input || !(JOB_TYPES as readonly string[]).includes(input.type)) throw badJob('unknown job type');
  if (typeof input.payload !== 'object' || input.payload === null) throw badJob('the payload must be an object');
  if (input.key !== undefined && (typeof input.key !== 'string' || input.key.length < 1 || input.key.length > 512)) throw badJob('the key must be 1 to 512 characters');
  if (input.tenant !== undefined && (typeof input.tenant !== 'string' || input.tenant.length < 1 || input.tenant.length > 128)) throw badJob('the tenant must be 1 to 128 characters');
  const maxAttempts = input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 100) throw badJob('maxAttempts must be 1 to 100');
  return maxAttempts;
}

export interface WorkersDeps {
  store: Store;
  bus: Bus;
  clock: Clock;
  log: Logger;
  /** Called when a submission made a new job (not a deduplicated one): the runner wakes for it. */
  onSubmit: () => void;
}

export function createWorkers(deps: WorkersDeps): JobQueue {
  const { clock } = deps;
  const jobs = createWorkersRepository(deps.store);

  async function announce(row: JobRow | undefined) {
    if (!row) return;
    try {
      await deps.bus.publish('evt.workers.jobProgress', { job: toJobView(row), at: clock.now() });
    } catch (e) {
      deps.log.warn('evt.workers.jobProgress not published', { jobId: row.id, ...errorFields(e) });
    }
  }

  const byId = jobs.get;

  async function submit(input: JobSubmission): Promise<{ job: JobView; deduplicated: boolean }> {
    const maxAttempts = checkSubmission(input);
    const now = clock.now();
    const row: JobRow = {
      id: newId('job', clock), type: input.type, key: input.key ?? null, payload: input.payload, status: 'queued', attempts: 0, maxAttempts,
      runAt: now, leaseOwner: null, leaseUntil: null, cancelRequested: false, progress: {}, error: null,
      createdAt: now, updatedAt: now, startedAt: null, finishedAt: null,
    };
    // One queued job per key, across processes: a second one inserts nothing.
    const inserted = await jobs.insert(row);
    if (inserted) {
      await announce(inserted);
      return { job: toJobView(inserted), deduplicated: false };
    }
    const pending = await jobs.queuedWithKey(row.key!);
    if (!pending) return submit(input); // it was claimed in between: queue ours
    return { job: toJobView(pending), deduplicated: true };
  }

  /** The job's row; 404 for anything else (the id comes off the bus unchecked). */
  async function existing(id: unknown): Promise<JobRow> {
    const r = typeof id === 'string' ? await byId(id) : undefined;
    if (!r) throw jobNotFound();
    return r;
  }

  async function get(id: string): Promise<JobView> {
    return toJobView(await existing(id));
  }

  async function cancel(id: string): Promise<JobView> {
    await existing(id);
    const now = clock.now();
    // A queued job ends here; a running one is flagged and its worker stops it at the next heartbeat.
    const ended = await jobs.cancelQueued(id, now);
    if (ended) {
      await announce(ended);
      return toJobView(ended);
    }
    const flagged = await jobs.flagCancel(id, now);
    await announce(flagged);
    return toJobView(flagged ?? (await byId(id))!);
  }

  // The claim is one statement, so two workers never take the same job.
  async function claim(workerId: string, leaseMs: number): Promise<JobRow | undefined> {
    const now = clock.now();
    const row = await jobs.claimNext(workerId, now + leaseMs, now);
    if (!row) return undefined;
    if (row.attempts > row.maxAttempts) {
      // Taken over once too often: the workers that held it kept dying.
      await finish(row.id, workerId, { status: 'failed', error: `no worker finished the job in ${row.maxAttempts} attempts` });
      return claim(workerId, leaseMs);
    }
    await announce(row);
    return row;
  }

  /** Extends the lease; answers whether it is still ours and whether a cancel was asked. */
  async function renew(id: string, workerId: string, leaseMs: number): Promise<{ held: boolean; cancelRequested: boolean }> {
    const r = await jobs.renew(id, workerId, clock.now() + leaseMs);
    return { held: !!r, cancelRequested: r?.cancelRequested ?? false };
  }

  async function progress(id: string, workerId: string, figures: JobProgress) {
    await announce(await jobs.setProgress(id, workerId, figures, clock.now()));
  }

  /** Records how this worker's attempt ended; nothing happens if the lease went to another worker. */
  async function finish(id: string, workerId: string, outcome: Outcome): Promise<void> {
    const now = clock.now();
    let row: JobRow | undefined;
    if (outcome.status === 'released') {
      row = await jobs.release(id, workerId, now);
    } else if (outcome.status === 'retry') {
      try {
        row = await jobs.retryAt(id, workerId, outcome.runAt, outcome.error, now);
      } catch (e) {
        if (!jobs.isDuplicateKey(e)) throw e;
        // A newer job with the same key is already queued (one queued job per key): it does what
        // this retry would have done.
        row = await jobs.end(id, workerId, 'failed', `${outcome.error} (superseded by a pending job with the same key)`, now);
      }
    } else {
      const error = outcome.status === 'failed' ? outcome.error : outcome.status === 'cancelled' ? 'cancelled' : null;
      row = await jobs.end(id, workerId, outcome.status, error, now);
    }
    await announce(row);
  }

  const listen = (bus: Bus) => answerJobCommands(bus, { submit, cancel, get }, deps.onSubmit);
  return { submit, get, cancel, claim, renew, progress, finish, listen };
}

export type Workers = JobQueue;
