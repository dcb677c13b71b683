// Composition root of the workers service: the job queue (answering the workers' bus commands),
// the job handlers (checked at boot: one per job type) and the runner that executes them.
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { checkJobHandlers } from './jobs';
import { createLibraryScanJob } from './jobs/library-scan';
import { createJobRunner } from './runner';
import { loadWorkersConfig, type WorkersConfig } from './workers.config';
import { createWorkersApp } from './workers.routes';
import { answerJobCommands, createJobQueue } from './workers.service';

export function createWorkersService(deps: ServiceDeps, cfg: WorkersConfig): Service {
  const log = deps.log.child({ worker: cfg.workerId });
  const handlers = checkJobHandlers([
    createLibraryScanJob({
      mediaRoots: cfg.mediaRoots,
      probesPerRoot: cfg.probesPerRoot,
      batchSize: cfg.batchSize,
      indexTimeoutMs: cfg.indexTimeoutMs,
    }),
  ]);
  const queue = createJobQueue({ db: deps.db, bus: deps.bus, clock: deps.clock, log });
  const runner = createJobRunner({
    queue,
    handlers,
    bus: deps.bus,
    clock: deps.clock,
    log,
    workerId: cfg.workerId,
    concurrency: cfg.concurrency,
    leaseMs: cfg.leaseMs,
    pollMs: cfg.pollMs,
    retry: { baseMs: cfg.retryBaseMs, maxMs: cfg.retryMaxMs },
  });
  let stopAnswering: (() => void) | undefined;
  return {
    app: createWorkersApp(deps),
    start() {
      stopAnswering = answerJobCommands(deps.bus, queue, () => runner.wake());
      runner.start();
    },
    async stop() {
      stopAnswering?.();
      await runner.stop();
    },
  };
}

export const workersService = defineService({ loadConfig: loadWorkersConfig, create: createWorkersService });
