// The one interface of the job queue, whichever store holds it: the database (workers.service.ts,
// SQLite by default, or PostgreSQL: processes sharing it share the jobs) or a JetStream work-queue
// stream (queue-jetstream.ts, when the bus is NATS: workers on any machine that reaches the NATS
// server share the jobs). The runner and the bus commands see only this.
import type { Bus } from '../../platform/bus/bus';
import type { JobProgress, JobSubmission, JobView } from '../../platform/bus/subjects';
import type { workersJobs } from './workers.tables';
import { workersErrorTable } from './workers.errors';

export type JobRow = typeof workersJobs.$inferSelect;

export type Outcome =
  | { status: 'done' | 'cancelled' }
  | { status: 'failed'; error: string }
  | { status: 'retry'; error: string; runAt: number }
  /** Shutdown: the attempt does not count, another worker may start at once. */
  | { status: 'released' };

export interface JobQueue {
  submit(input: JobSubmission): Promise<{ job: JobView; deduplicated: boolean }>;
  get(id: string): Promise<JobView>;
  cancel(id: string): Promise<JobView>;
  /** The next due job under a lease of leaseMs for workerId, or nothing. */
  claim(workerId: string, leaseMs: number): Promise<JobRow | undefined>;
  /** Extends the lease; answers whether it is still ours and whether a cancel was asked. */
  renew(id: string, workerId: string, leaseMs: number): Promise<{ held: boolean; cancelRequested: boolean }>;
  progress(id: string, workerId: string, figures: JobProgress): Promise<void>;
  /** Records how this worker's attempt ended; nothing happens if the lease went to another worker. */
  finish(id: string, workerId: string, outcome: Outcome): Promise<void>;
  /** Answers the workers' bus commands (submit, cancel, look up). Returns the unsubscribe. */
  listen(bus: Bus): () => void;
  /** Releases what the queue holds open (a connection); the database queue holds nothing. */
  close?(): Promise<void>;
}

/** The workers' bus commands (submit, cancel, look up) answered from either queue; returns the unsubscribe. */
export function answerJobCommands(bus: Bus, queue: Pick<JobQueue, 'submit' | 'cancel' | 'get'>, onSubmit: () => void): () => void {
  const offs = [
    bus.answer('cmd.workers.submit', async (req) => {
      const out = await queue.submit(req);
      if (!out.deduplicated) onSubmit();
      return out;
    }, workersErrorTable),
    bus.answer('cmd.workers.cancel', async (req) => ({ job: await queue.cancel(req?.id) }), workersErrorTable),
    bus.answer('qry.workers.job', async (req) => ({ job: await queue.get(req?.id) }), workersErrorTable),
  ];
  return () => offs.forEach((off) => off());
}
