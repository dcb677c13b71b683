// The worker loop: claims due jobs up to the concurrency bound, renews their leases on a heartbeat
// (which also carries cancellation from any process), and records how each attempt ended.
// A process that dies stops renewing; once its lease runs out another worker claims the job.
import type { Bus } from '../../platform/bus/bus';
import type { JobType } from '../../platform/bus/subjects';
import { AppError, meaningOf } from '../../platform/errors';
import { errorFields, type Clock, type Logger } from '../../platform/runtime';
import { retryDelayMs } from './backoff';
import type { JobHandler, JobHandlers } from './jobs';
import type { JobQueue, JobRow } from './queue';
import { workersErrorTable } from './workers.errors';

export interface RunnerDeps {
  queue: JobQueue;
  handlers: JobHandlers;
  bus: Bus;
  clock: Clock;
  log: Logger;
  workerId: string;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  retry: { baseMs: number; maxMs: number };
}

type StopReason = 'cancelled' | 'lease-lost' | 'shutdown';

/** What a failed attempt tells the user: an AppError's message, never the text of an unexpected error. */
const describe = (e: unknown) => (e instanceof AppError ? e.message : 'the job failed unexpectedly (see the worker log)');

export function createJobRunner(deps: RunnerDeps) {
  const { queue, workerId, leaseMs } = deps;
  const active = new Map<string, AbortController>();
  let stopped = true;
  let pollTimer: ReturnType<typeof setInterval> | undefined;
  let beatTimer: ReturnType<typeof setInterval> | undefined;
  let filling: Promise<void> | undefined;
  const runs = new Set<Promise<void>>();

  async function execute(row: JobRow) {
    const controller = new AbortController();
    active.set(row.id, controller);
    // One handler per type (checked at boot): its payload is the one of its row's type.
    const handler = deps.handlers[row.type as JobType] as JobHandler;
    const log = deps.log.child({ jobId: row.id, jobType: row.type, attempt: row.attempts });
    try {
      await handler.run({
        job: { id: row.id, type: row.type as never, payload: row.payload as never, attempt: row.attempts },
        signal: controller.signal,
        progress: (figures) => queue.progress(row.id, workerId, figures),
        bus: deps.bus,
        log,
        clock: deps.clock,
      });
      controller.signal.throwIfAborted();
      await queue.finish(row.id, workerId, { status: 'done' });
    } catch (e) {
      const reason = controller.signal.aborted ? (controller.signal.reason as StopReason) : undefined;
      if (reason === 'cancelled') await queue.finish(row.id, workerId, { status: 'cancelled' });
      else if (reason === 'shutdown') await queue.finish(row.id, workerId, { status: 'released' });
      else if (reason === 'lease-lost') log.warn('lease lost: another worker has the job');
      else {
        const retryable = e instanceof AppError ? meaningOf(e, workersErrorTable).retryable : true;
        if (!(e instanceof AppError)) log.error('job failed', errorFields(e));
        if (retryable && row.attempts < row.maxAttempts) {
          const runAt = deps.clock.now() + retryDelayMs(row.attempts, deps.retry);
          await queue.finish(row.id, workerId, { status: 'retry', error: describe(e), runAt });
        } else await queue.finish(row.id, workerId, { status: 'failed', error: describe(e) });
      }
    } finally {
      active.delete(row.id);
    }
  }

  /** Claims jobs while there is room; one fill at a time. */
  function fill(): Promise<void> {
    return (filling ??= (async () => {
      try {
        while (!stopped && active.size < deps.concurrency) {
          const row = await queue.claim(workerId, leaseMs);
          if (!row) break;
          const run = execute(row).catch((e) => deps.log.error('job bookkeeping failed', { jobId: row.id, ...errorFields(e) }));
          runs.add(run);
          void run.finally(() => {
            runs.delete(run);
            if (!stopped) void fill();
          });
        }
      } catch (e) {
        deps.log.error('claiming jobs failed', errorFields(e));
      }
    })().finally(() => (filling = undefined)));
  }

  // One beat at a time: a slow store (JetStream over the network) must not pile up renewals.
  let beating = false;
  async function heartbeat() {
    if (beating) return;
    beating = true;
    try {
      for (const [id, controller] of active) {
        try {
          const { held, cancelRequested } = await queue.renew(id, workerId, leaseMs);
          if (!held) controller.abort('lease-lost' satisfies StopReason);
          else if (cancelRequested) controller.abort('cancelled' satisfies StopReason);
        } catch (e) {
          deps.log.error('lease renewal failed', { jobId: id, ...errorFields(e) });
        }
      }
    } finally {
      beating = false;
    }
  }

  // A cancel asked in any process is published at once: the worker running the job stops it now
  // rather than at its next heartbeat (which stays the fallback should the event be missed).
  let unsubscribe = () => {};
  const onJobEvent = ({ job }: { job: { id: string; cancelRequested: boolean } }) => {
    if (job.cancelRequested) active.get(job.id)?.abort('cancelled' satisfies StopReason);
  };

  return {
    start() {
      stopped = false;
      unsubscribe = deps.bus.subscribe('evt.workers.jobProgress', onJobEvent);
      // Three beats per lease: one missed beat (a busy moment) does not lose the job.
      beatTimer = setInterval(() => void heartbeat(), Math.max(50, Math.floor(leaseMs / 3)));
      pollTimer = setInterval(() => void fill(), deps.pollMs);
      void fill();
    },
    /** A job was submitted in this process: look now rather than at the next poll. */
    wake() {
      if (!stopped) void fill();
    },
    /** Stops claiming, hands running jobs back (they start again at once elsewhere) and waits for them. */
    async stop() {
      stopped = true;
      unsubscribe();
      clearInterval(pollTimer);
      clearInterval(beatTimer);
      for (const c of active.values()) c.abort('shutdown' satisfies StopReason);
      await filling;
      // A handler stops at its next check of the signal; one stuck in a long call is left to its lease.
      await Promise.race([Promise.all([...runs]), Bun.sleep(10_000)]);
    },
    get running() {
      return active.size;
    },
  };
}
