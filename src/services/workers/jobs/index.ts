// The typed job map: one handler per job type of WorkerJobs, checked when the service starts, so a
// job type without a handler (or with two) stops start-up instead of leaving jobs queued forever.
import type { Bus } from '../../../platform/bus/bus';
import { JOB_TYPES, type JobProgress, type JobType, type WorkerJobs } from '../../../platform/bus/subjects';
import type { Clock, Logger } from '../../../platform/runtime';

export interface JobContext<T extends JobType> {
  job: { id: string; type: T; payload: WorkerJobs[T]; attempt: number };
  /** Aborted on cancel, on shutdown and when the lease is lost; a handler stops soon after. */
  signal: AbortSignal;
  /** Records the figures (database) and publishes them (evt.workers.jobProgress). */
  progress(figures: JobProgress): Promise<void>;
  bus: Bus;
  log: Logger;
  clock: Clock;
}

export interface JobHandler<T extends JobType = JobType> {
  type: T;
  run(ctx: JobContext<T>): Promise<void>;
}

export type JobHandlers = { [T in JobType]: JobHandler<T> };

/** Builds the map from a list of handlers; throws naming the type that has no handler or two. */
export function checkJobHandlers(handlers: JobHandler<any>[]): JobHandlers {
  const map = new Map<string, JobHandler<any>>();
  for (const h of handlers) {
    if (map.has(h.type)) throw new Error(`job type ${h.type} has two handlers`);
    if (!(JOB_TYPES as readonly string[]).includes(h.type)) throw new Error(`job handler for unknown type ${h.type}`);
    map.set(h.type, h);
  }
  const missing = JOB_TYPES.filter((t) => !map.has(t));
  if (missing.length) throw new Error(`job type ${missing.join(', ')} has no handler`);
  return Object.fromEntries(map) as JobHandlers;
}
