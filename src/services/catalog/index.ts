// Composition root of the catalog service: its features, listed (platform/feature.ts): the media
// engine (answering qry.media.probe on the bus), qry.catalog.playable, the catalog (scan, works) and
// library scans, over the kind registry with its plugins; then the HTTP app.
import { join } from 'node:path';
import { bearerGuard } from '../../platform/http/bearer-guard';
import { createResponseCache } from '../../platform/http/response-cache';
import { bearerCors } from '../../platform/http/bearer-cors';
import { createServiceApp } from '../../platform/http/service-app';
import { featuresLifetime, mountFeatures, type Feature } from '../../platform/feature';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { loadCatalogConfig, type CatalogConfig } from './catalog.config';
import { catalogErrorTable } from './catalog.errors';
import * as catalogModels from './catalog.model';
import { catalogRoutes } from './catalog.routes';
import { createCatalog } from './catalog.service';
import { createKindRegistry } from './kinds';
import * as libraryModels from './library/library.model';
import { createLibrary } from './library/library.service';
import { scheduleLibraryScans } from './library/library.schedule';
import { watchLibrary } from './library/library.watch';
import { createFfprobe, findFfprobe } from './media-engine/ffprobe';
import { createImageEngine } from './media-engine/images';
import { createProbeAnswerer } from './media-engine/probe.answerer';
import { createPlayableAnswerer } from './playable.answerer';
import { audiobookPlugin } from './plugins/audiobook';
import { concertPlugin } from './plugins/concert';

/** Content-type plugins shipped with Keel; their kinds join the registry. */
export const KIND_PLUGINS = [audiobookPlugin, concertPlugin];

export function createCatalogService(deps: ServiceDeps, cfg: CatalogConfig): Service {
  const ffprobe = createFfprobe({
    binary: findFfprobe(cfg.ffprobePath, deps.config.env.PATH),
    concurrency: cfg.probeConcurrency,
    maxWaiting: cfg.probeQueue,
    probeSizeBytes: cfg.probeSizeBytes,
    analyzeDurationUs: cfg.probeAnalyzeUs,
    timeoutMs: cfg.probeTimeoutMs,
  });
  const answerer = createProbeAnswerer({ mediaRoots: cfg.mediaRoots, ffprobe, log: deps.log.child({ component: 'media-engine' }) });
  const playable = createPlayableAnswerer({ store: deps.store });
  const images = createImageEngine({
    ffmpegPath: cfg.ffmpegPath,
    cacheDir: join(deps.config.dataDir, 'catalog-images'),
    concurrency: cfg.imageConcurrency,
    timeoutMs: cfg.probeTimeoutMs,
  });
  const catalog = createCatalog({
    images,
    store: deps.store,
    bus: deps.bus,
    clock: deps.clock,
    log: deps.log,
    mediaRoots: cfg.mediaRoots,
    kinds: createKindRegistry(KIND_PLUGINS),
    // Format probe and keyframe scan each have the timeout; queueing behind the concurrency cap adds some.
    probeWaitMs: cfg.probeTimeoutMs * 2 + 5_000,
  });
  const guard = bearerGuard({
    service: 'catalog',
    bus: deps.bus,
    clock: deps.clock,
    log: deps.log.child({ component: 'bearer-guard' }),
    limits: { scan: cfg.scanBudget },
  });
  const library = createLibrary({ store: deps.store, bus: deps.bus, clock: deps.clock, log: deps.log, mediaRoots: cfg.mediaRoots, scanFile: catalog.scan });
  const features: Feature[] = [
    { service: answerer, listen: (bus) => answerer.listen(bus) },
    { service: playable, listen: (bus) => playable.listen(bus) },
    {
      service: catalog,
      routes: catalogRoutes({
        catalog,
        library,
        guard,
        // The serialised pages of /works, until the next write (platform/http/response-cache.ts).
        pages: createResponseCache({ version: deps.store.version, cacheControl: 'no-cache' }),
      }),
      models: [catalogModels],
      start() {
        catalog.startEvents();
        catalog.backfillSearch().catch((e) => deps.log.warn('search backfill failed', { error: String(e) }));
      },
      stop: () => catalog.stopEvents(),
    },
    {
      service: library,
      models: [libraryModels],
      listen: (bus) => library.listen(bus),
      start() {
        stopSchedule = scheduleLibraryScans(library, cfg.libraryScanIntervalS, deps.log);
        if (cfg.libraryWatch) stopWatch = watchLibrary(library, cfg.mediaRoots, cfg.libraryWatchDebounceMs, deps.log);
      },
      stop() {
        stopWatch();
        stopSchedule();
      },
    },
  ];
  let stopSchedule = () => {};
  let stopWatch = () => {};
  const app = mountFeatures(
    createServiceApp(deps, {
      name: 'catalog',
      style: 'problem',
      errors: catalogErrorTable,
      models: features.flatMap((f) => f.models ?? []),
      title: 'Keel catalog',
      description: 'Works, editions and media assets; file scanning through the media engine. Errors are RFC 9457 problem+json.',
      tags: [
        { name: 'scan', description: 'Register files under the media roots' },
        { name: 'works', description: 'Works, their assets and relations (public reads)' },
        { name: 'kinds', description: 'Kind registry' },
        { name: 'library', description: 'Library scans of whole folders, run by the workers service' },
      ],
    })
      // The media web app (on the playback port) calls these routes from its page.
      .use(bearerCors('catalog')),
    features,
  );
  return { app, ...featuresLifetime(features, deps.bus) };
}

export const catalogService = defineService({ loadConfig: loadCatalogConfig, create: createCatalogService });
