// Composition root of the playback service: URL signer, segment cache, then its features, listed
// (platform/feature.ts): playback sessions, watch progress, the media web app; then the app.
// It meets the catalog, sources and workers on the bus only.
import { join } from 'node:path';
import { createSessionCheck } from '../../platform/auth/session-check';
import { bearerGuard } from '../../platform/http/bearer-guard';
import { createServiceApp } from '../../platform/http/service-app';
import { errorFields } from '../../platform/runtime';
import { featuresLifetime, mountFeatures, type Feature } from '../../platform/feature';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { loadPlaybackConfig, type PlaybackConfig } from './playback.config';
import { playbackErrorTable } from './playback.errors';
import * as playbackModels from './playback.model';
import { createPlaybackRepository } from './playback.repository';
import { playbackRoutes } from './playback.routes';
import { mediaAppAssets } from './app/app.assets';
import { mediaAppRoutes } from './app/app.routes';
import { createPlayback } from './playback.service';
import { createSegmentCache } from './segment-cache';
import { createUrlSigner } from './url-token';
import * as progressModels from './progress/progress.model';
import { createProgressRepository } from './progress/progress.repository';
import { progressRoutes } from './progress/progress.routes';
import { createProgress } from './progress/progress.service';

const SWEEP_EVERY_MS = 60 * 60_000;

export function createPlaybackService(deps: ServiceDeps, cfg: PlaybackConfig): Service {
  // The workers' segment jobs write here (the same APP_DATA_DIR); playback serves and evicts.
  const cache = createSegmentCache({ dir: join(deps.config.dataDir, 'playback-cache'), maxBytes: cfg.cacheBytes });
  const playback = createPlayback({
    bus: deps.bus,
    clock: deps.clock,
    log: deps.log,
    config: cfg,
    signer: createUrlSigner(deps.config.apiSecret),
    cache,
    repo: createPlaybackRepository(deps.store),
    // The identity session behind each URL, asked over the bus and reused 2 s: a revocation ends the
    // URLs it opened within that (the contract's bound is 5 s), without a bus round trip per segment.
    checkSession: createSessionCheck(deps.bus, { ttlMs: 2000, clock: deps.clock }),
  });
  const progress = createProgress({ bus: deps.bus, clock: deps.clock, repo: createProgressRepository(deps.store) });
  const guard = bearerGuard({ service: 'playback', bus: deps.bus, clock: deps.clock, log: deps.log.child({ component: 'bearer-guard' }) });
  let sweeper: ReturnType<typeof setInterval> | undefined;
  const sweep = () => playback.sweep().catch((e) => deps.log.warn('playback sweep failed', errorFields(e)));
  const features: Feature[] = [
    {
      service: playback,
      routes: playbackRoutes({ playback, guard }),
      models: [playbackModels],
      async start() {
        await sweep();
        sweeper = setInterval(sweep, SWEEP_EVERY_MS);
        sweeper.unref?.();
      },
      stop: () => clearInterval(sweeper),
    },
    { service: progress, routes: progressRoutes(progress, guard), models: [progressModels] },
    { service: null, routes: mediaAppRoutes({ assets: mediaAppAssets, configured: cfg.appUrls, peers: deps.peers ?? {}, ports: deps.config.ports }) },
  ];
  const app = mountFeatures(
    createServiceApp(deps, {
      name: 'playback',
      style: 'problem',
      errors: playbackErrorTable,
      models: features.flatMap((f) => f.models ?? []),
      title: 'Keel playback',
      description:
        'Playback sessions for catalog assets: direct play with Range, and HLS whose segments are cut at the indexed keyframes. ' +
        'Errors are RFC 9457 problem+json.',
      dottedPaths: true,
      tags: [
        { name: 'sessions', description: 'Open and end playback sessions (Bearer, resource:asset:play)' },
        { name: 'progress', description: "Watch state per actor: where they are in each asset, continue watching (Bearer, resource:asset:play)" },
        {
          name: 'play',
          description:
            'Session URLs: playlists, segments, the file (the signed token in the path is the credential). Every answer, errors included, ' +
            'carries Access-Control-Allow-Origin: * and exposes Content-Range, Accept-Ranges, Content-Length, Content-Disposition and ' +
            'Retry-After; OPTIONS (a preflight) answers 204 allowing GET with a Range header, so a web player on any origin plays them.',
        },
      ],
    }),
    features,
  );
  return { app, ...featuresLifetime(features, deps.bus) };
}

export const playbackService = defineService({ loadConfig: loadPlaybackConfig, create: createPlaybackService });
