// The workers service's table: durable jobs, claimed under a lease that a heartbeat renews.
import { sql } from 'drizzle-orm';
import { defineTables } from '../../platform/db-schema';
import type { JobProgress } from '../../platform/bus/subjects';

export const workersTables = defineTables(({ index, integer, table, text, uniqueIndex }) => {
  const workersJobs = table(
    'workers_jobs',
    {
      id: text('id').primaryKey(),
      type: text('type').notNull(),
      /** Dedup key: at most one queued job per key (the partial unique index below). */
      key: text('key'),
      payload: text('payload', { mode: 'json' }).$type<unknown>().notNull(),
      /** queued, running, done, failed or cancelled. */
      status: text('status').notNull(),
      attempts: integer('attempts').notNull(),
      maxAttempts: integer('max_attempts').notNull(),
      /** A queued job is not claimed before this time (retry backoff). */
      runAt: integer('run_at').notNull(),
      /** The worker holding a running job, and until when; past it, another worker may take the job. */
      leaseOwner: text('lease_owner'),
      leaseUntil: integer('lease_until'),
      cancelRequested: integer('cancel_requested', { mode: 'boolean' }).notNull(),
      progress: text('progress', { mode: 'json' }).$type<JobProgress>().notNull(),
      error: text('error'),
      createdAt: integer('created_at').notNull(),
      updatedAt: integer('updated_at').notNull(),
      startedAt: integer('started_at'),
      finishedAt: integer('finished_at'),
    },
    (t) => [
      uniqueIndex('workers_jobs_pending_key').on(t.key).where(sql`status = 'queued'`),
      index('workers_jobs_claim').on(t.status, t.runAt),
    ],
  );
  return { workersJobs };
});

export const { workersJobs } = workersTables('sqlite');
