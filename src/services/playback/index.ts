// Composition root of the playback service: URL signer, segment cache, the playback rules and the app.
// It meets the catalog, sources and workers on the bus only.
import { join } from 'node:path';
import { bearerGuard } from '../../platform/http/bearer-guard';
import { createServiceApp } from '../../platform/http/service-app';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { loadPlaybackConfig, type PlaybackConfig } from './playback.config';
import { playbackErrors } from './playback.errors';
import * as playbackModels from './playback.model';
import { playbackRoutes } from './playback.routes';
import { createPlayback } from './playback.service';
import { createSegmentCache } from './segment-cache';
import { createUrlSigner } from './url-token';

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
  });
  const guard = bearerGuard({ service: 'playback', bus: deps.bus, clock: deps.clock, log: deps.log.child({ component: 'bearer-guard' }) });
  const app = createServiceApp(deps, {
    name: 'playback',
    style: 'problem',
    errors: playbackErrors,
    models: [playbackModels],
    title: 'Keel playback',
    description:
      'Playback sessions for catalog assets: direct play with Range, and HLS whose segments are cut at the indexed keyframes. ' +
      'Errors are RFC 9457 problem+json.',
    dottedPaths: true,
    tags: [
      { name: 'sessions', description: 'Open a playback session (Bearer, resource:asset:play)' },
      {
        name: 'play',
        description:
          'Session URLs: playlists, segments, the file (the signed token in the path is the credential). Every answer, errors included, ' +
          'carries Access-Control-Allow-Origin: * and exposes Content-Range, Accept-Ranges, Content-Length, Content-Disposition and ' +
          'Retry-After; OPTIONS (a preflight) answers 204 allowing GET with a Range header, so a web player on any origin plays them.',
      },
    ],
  }).use(playbackRoutes({ playback, guard }));
  return { app };
}

export const playbackService = defineService({ loadConfig: loadPlaybackConfig, create: createPlaybackService });
