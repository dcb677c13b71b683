// Composition root of the workers service, a list of two features (platform/feature.ts): the job
// queue (answering the workers' bus commands) and the runner that executes the jobs with their
// handlers (checked at boot: one per job type).
import { createServiceApp } from '../../platform/http/service-app';
import { errorFields } from '../../platform/runtime';
import { featuresLifetime, type Feature } from '../../platform/feature';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { workersErrorTable } from './workers.errors';
import { checkJobHandlers } from './jobs';
import { join } from 'node:path';
import { createLibraryScanJob } from './jobs/library-scan';
import { createPlaybackSegmentJob } from './jobs/playback-segment';
import { createPlaybackSubtitlesJob } from './jobs/playback-subtitles';
import { createPlaybackThumbnailsJob } from './jobs/playback-thumbnails';
import type { JobQueue } from './queue';
import { createJobRunner } from './runner';
import { loadWorkersConfig, type WorkersConfig } from './workers.config';
import { createWorkers } from './workers.service';

export async function createWorkersService(deps: ServiceDeps, cfg: WorkersConfig): Promise<Service> {
  const log = deps.log.child({ worker: cfg.workerId });
  const media = {
    mediaRoots: cfg.mediaRoots,
    cacheDir: join(deps.config.dataDir, 'playback-cache'),
    ffmpegPath: cfg.ffmpegPath,
    timeoutMs: cfg.segmentTimeoutMs,
  };
  const handlers = checkJobHandlers([
    createLibraryScanJob({
      mediaRoots: cfg.mediaRoots,
      probesPerRoot: cfg.probesPerRoot,
      batchSize: cfg.batchSize,
      indexTimeoutMs: cfg.indexTimeoutMs,
    }),
    createPlaybackSegmentJob(media),
    createPlaybackThumbnailsJob(media),
    createPlaybackSubtitlesJob(media),
  ]);
  // A new job wakes the runner at once rather than at its next poll.
  const onSubmit = () => runner.wake();
  const inDatabase = () => createWorkers({ store: deps.store, bus: deps.bus, clock: deps.clock, log, onSubmit });
  let workers: JobQueue;
  if (cfg.queue === 'database') workers = inDatabase();
  else {
    // Loaded only when asked for, like the NATS bus: the embedded default never loads the client.
    const { createJetStreamQueue, JetStreamUnavailable } = await import('./queue-jetstream');
    try {
      workers = await createJetStreamQueue({ url: deps.config.bus, bus: deps.bus, clock: deps.clock, log, leaseMs: cfg.leaseMs, onSubmit });
    } catch (e) {
      // Only a server without JetStream lets the database queue stand in, and only when not asked for by name.
      if (!(e instanceof JetStreamUnavailable)) throw e;
      if (cfg.queue === 'jetstream') throw new Error('APP_WORKERS_QUEUE=jetstream: the NATS server of APP_BUS has no JetStream (start it with -js)');
      log.warn('JetStream is not available on the NATS server (start it with -js): jobs wait in the database queue', errorFields(e.cause));
      workers = inDatabase();
    }
  }
  const runner = createJobRunner({
    queue: workers,
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
  // Jobs arrive and report on the bus: over HTTP the service answers only its probes (media spec).
  const app = createServiceApp(deps, {
    name: 'workers',
    style: 'problem',
    errors: workersErrorTable,
    title: 'Keel workers service',
    description: 'Keel workers: background jobs of the media services. Its work happens on the bus; over HTTP it answers its probes. Errors are RFC 9457 problem+json.',
  });
  const features: Feature[] = [
    { service: workers, listen: (bus) => workers.listen(bus), stop: () => workers.close?.() },
    { service: runner, start: () => runner.start(), stop: () => runner.stop() },
  ];
  return { app, ...featuresLifetime(features, deps.bus) };
}

export const workersService = defineService({ loadConfig: loadWorkersConfig, create: createWorkersService });
