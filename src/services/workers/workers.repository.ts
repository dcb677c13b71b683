// Every query of the job queue, on the Store: a job's row, the deduplicated insert, cancels, the
// claim (one statement; Store.forClaim makes concurrent claims take different jobs) and the updates
// that only the worker holding the lease can make.
import { and, asc, eq, lt, lte, or, sql } from 'drizzle-orm';
import type { JobProgress } from '../../platform/bus/subjects';
import type { Store } from '../../platform/store';
import type { JobRow } from './queue';
import { workersTables } from './workers.tables';

export function createWorkersRepository(store: Store) {
  const { orm } = store;
  const { workersJobs } = workersTables(store.dialect);
  /** The job, while `workerId` holds its lease. */
  const mine = (id: string, workerId: string) => and(eq(workersJobs.id, id), eq(workersJobs.leaseOwner, workerId), eq(workersJobs.status, 'running'));
  const free = (now: number) => ({ leaseOwner: null, leaseUntil: null, updatedAt: now });

  /**
   * The id of the next job to claim: a queued job that is due, or a running one whose lease ran out
   * (its worker died or hung), oldest first.
   */
  function nextDue(now: number) {
    const next = orm
      .select({ id: workersJobs.id })
      .from(workersJobs)
      .where(or(and(eq(workersJobs.status, 'queued'), lte(workersJobs.runAt, now)), and(eq(workersJobs.status, 'running'), lt(workersJobs.leaseUntil, now))))
      .orderBy(asc(workersJobs.runAt), asc(workersJobs.createdAt))
      .limit(1);
    // Several processes (and connections) claim at once: each claim takes a different job.
    return store.forClaim(next);
  }

  return {
    get: async (id: string): Promise<JobRow | undefined> => (await orm.select().from(workersJobs).where(eq(workersJobs.id, id)).limit(1))[0],
    /**
     * Inserts the job unless one with its key is queued already (undefined then). The partial unique
     * index makes "one queued job per key" hold across processes; a conflict on it inserts nothing
     * (ON CONFLICT DO NOTHING with no target covers partial indexes on both databases).
     */
    insert: async (row: JobRow): Promise<JobRow | undefined> => (await orm.insert(workersJobs).values(row).onConflictDoNothing().returning())[0],
    queuedWithKey: async (key: string): Promise<JobRow | undefined> =>
      (await orm.select().from(workersJobs).where(and(eq(workersJobs.key, key), eq(workersJobs.status, 'queued'))).limit(1))[0],
    /** A queued job, cancelled; undefined when it is not queued. */
    cancelQueued: async (id: string, now: number): Promise<JobRow | undefined> =>
      (await orm.update(workersJobs).set({ status: 'cancelled', finishedAt: now, updatedAt: now, error: 'cancelled' }).where(and(eq(workersJobs.id, id), eq(workersJobs.status, 'queued'))).returning())[0],
    /** A running job, flagged for its worker to stop; undefined when it is not running. */
    flagCancel: async (id: string, now: number): Promise<JobRow | undefined> =>
      (await orm.update(workersJobs).set({ cancelRequested: true, updatedAt: now }).where(and(eq(workersJobs.id, id), eq(workersJobs.status, 'running'))).returning())[0],
    /** Claims the next due job under a lease, in one statement, so two workers never take the same job. */
    claimNext: async (workerId: string, leaseUntil: number, now: number): Promise<JobRow | undefined> =>
      (
        await orm
          .update(workersJobs)
          .set({
            status: 'running',
            leaseOwner: workerId,
            leaseUntil,
            attempts: sql`${workersJobs.attempts} + 1`,
            startedAt: sql`coalesce(${workersJobs.startedAt}, ${now})`,
            updatedAt: now,
          })
          .where(eq(workersJobs.id, nextDue(now)))
          .returning()
      )[0],
    /** Extends the lease: undefined when it is no longer this worker's. */
    renew: async (id: string, workerId: string, leaseUntil: number): Promise<{ cancelRequested: boolean } | undefined> =>
      (await orm.update(workersJobs).set({ leaseUntil }).where(mine(id, workerId)).returning({ cancelRequested: workersJobs.cancelRequested }))[0],
    setProgress: async (id: string, workerId: string, figures: JobProgress, now: number): Promise<JobRow | undefined> =>
      (await orm.update(workersJobs).set({ progress: figures, updatedAt: now }).where(mine(id, workerId)).returning())[0],
    /** Back to the queue, due now, the attempt not counted. */
    release: async (id: string, workerId: string, now: number): Promise<JobRow | undefined> =>
      (await orm.update(workersJobs).set({ ...free(now), status: 'queued', runAt: now, attempts: sql`${workersJobs.attempts} - 1` }).where(mine(id, workerId)).returning())[0],
    /** Back to the queue, due at `runAt`; throws a unique violation when a job with its key is queued already (isDuplicateKey). */
    retryAt: async (id: string, workerId: string, runAt: number, error: string, now: number): Promise<JobRow | undefined> =>
      (await orm.update(workersJobs).set({ ...free(now), status: 'queued', runAt, error }).where(mine(id, workerId)).returning())[0],
    /** The attempt's end, for good. */
    end: async (id: string, workerId: string, status: 'done' | 'failed' | 'cancelled', error: string | null, now: number): Promise<JobRow | undefined> =>
      (await orm.update(workersJobs).set({ ...free(now), status, finishedAt: now, error }).where(mine(id, workerId)).returning())[0],
    /** Whether a write was refused because a job with the same key is queued (the partial unique index, on both databases). */
    isDuplicateKey: (e: unknown) => store.isUniqueViolation(e),
  };
}
