// Composition root of the identity service: config -> signing keys -> rules -> HTTP app + bus answers.
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { loadIdentityConfig, type IdentityConfig } from './identity.config';
import { createIdentityApp } from './identity.routes';
import { createIdentityCore } from './identity.service';
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
  const core = createIdentityCore({ db: deps.db, clock: deps.clock, log: deps.log, config, keys });

  const unanswer = [
    deps.bus.answer('qry.identity.session', ({ sid, sub }) => {
      if (typeof sid !== 'string' || typeof sub !== 'string') return { live: false, reauth: false, reason: 'unknown-session' as const };
      return core.sessionState(sid, sub);
    }),
    deps.bus.answer('qry.identity.jwks', () => ({ keys: keys.publicJwks() })),
  ];
  let sweeper: ReturnType<typeof setInterval> | undefined;

  return {
    app: createIdentityApp(deps, config, core, keys),
    start() {
      // A restart may have changed the key (APP_IDENTITY_SIGNING_KEY replaced): say which keys hold now.
      void deps.bus.publish('evt.identity.keysChanged', { kids: keys.publishedKids(), at: deps.clock.now() });
      core.sweep();
      sweeper = setInterval(() => core.sweep(), SWEEP_EVERY_MS);
      sweeper.unref?.();
    },
    stop() {
      clearInterval(sweeper);
      for (const u of unanswer) u();
    },
  };
}

export const identityService = defineService({ loadConfig: loadIdentityConfig, create: createIdentityService });
