// Composition root of the identity service: config -> signing keys -> rules -> its one feature
// (platform/feature.ts: HTTP routes, bus answers, the hourly sweep) -> the app.
import { createTokenBucket } from '../../platform/http/rate-limit';
import { bearerCors } from '../../platform/http/bearer-cors';
import { createServiceApp } from '../../platform/http/service-app';
import { errorFields } from '../../platform/runtime';
import { featuresLifetime, mountFeatures, type Feature } from '../../platform/feature';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createCallers } from './callers';
import { loadIdentityConfig, type IdentityConfig } from './identity.config';
import { identityErrorTable } from './identity.errors';
import * as identityModels from './identity.model';
import { identityRoutes } from './identity.routes';
import { createIdentity } from './identity.service';
import { createKeyStore } from './keys';

const SWEEP_EVERY_MS = 60 * 60_000;

export async function createIdentityService(deps: ServiceDeps, config: IdentityConfig): Promise<Service> {
  const keys = await createKeyStore({
    dataDir: deps.config.dataDir,
    overlapS: config.keyOverlapS,
    maxAgeS: config.keyMaxAgeS,
    given: config.signingKey,
    clock: deps.clock,
    log: deps.log,
    // Guards on the bus drop a key that left the JWKS now, not at their next re-read.
    onChange: (kids) => void deps.bus.publish('evt.identity.keysChanged', { kids, at: deps.clock.now() }),
  });
  const identity = createIdentity({ store: deps.store, clock: deps.clock, log: deps.log, config, keys });
  const callers = createCallers({ identity, keys, clock: deps.clock, apiSecret: deps.config.apiSecret });
  const sessionBudget = createTokenBucket(config.sessionRate, deps.clock);

  let sweeper: ReturnType<typeof setInterval> | undefined;
  const features: Feature[] = [
    {
      service: identity,
      routes: identityRoutes({ identity, keys, callers, sessionBudget }),
      models: [identityModels],
      listen: (bus) => identity.listen(bus),
      async start() {
        // A restart may have changed the key (APP_IDENTITY_SIGNING_KEY replaced): say which keys hold now.
        void deps.bus.publish('evt.identity.keysChanged', { kids: keys.publishedKids(), at: deps.clock.now() });
        await identity.sweep();
        const sweep = () => identity.sweep().catch((e) => deps.log.warn('identity sweep failed', errorFields(e)));
        sweeper = setInterval(sweep, SWEEP_EVERY_MS);
        sweeper.unref?.();
      },
      stop: () => clearInterval(sweeper),
    },
  ];
  const app = mountFeatures(
    createServiceApp(deps, {
      name: 'identity',
      style: 'problem',
      errors: identityErrorTable,
      models: features.flatMap((f) => f.models ?? []),
      title: 'Keel identity service',
      description:
        'Actors with policies and API keys, sessions with EdDSA access tokens and rotating refresh tokens, and the JWKS that verifies them. Admin routes take a workspace-API admin token (HS256) or an access token with the admin:identity policy.',
      dottedPaths: true,
      tags: [
        { name: 'actors', description: 'Actors, policies and API keys (admin)' },
        { name: 'sessions', description: 'Access and refresh tokens' },
        { name: 'keys', description: 'Signing keys and the JWKS' },
      ],
    })
      // The media web app (on the playback port) signs in from its page.
      .use(bearerCors('identity')),
    features,
  );
  return { app, ...featuresLifetime(features, deps.bus) };
}

export const identityService = defineService({ loadConfig: loadIdentityConfig, create: createIdentityService });
