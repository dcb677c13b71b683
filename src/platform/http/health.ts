// GET /health and GET /version, the same shapes on every service (media spec). No token, no dependency checks.
import { Elysia, t } from 'elysia';
import pkg from '../../../package.json';
import type { Clock } from '../runtime';
import { operation } from './openapi-errors';

declare const KEEL_COMMIT: string | undefined;

export const VERSION = pkg.version;
/** The commit the single binary was built from (scripts/build.ts); `dev` from source. */
export const BUILT_COMMIT = typeof KEEL_COMMIT === 'string' ? KEEL_COMMIT : 'dev';

export const HealthSchema = t.Object({
  status: t.Literal('ok'),
  timestamp: t.Number({ description: 'Unix epoch milliseconds' }),
  uptime: t.Number({ description: 'seconds since the process started' }),
  version: t.String(),
});
export const VersionSchema = t.Object({ commit: t.String(), component: t.String(), train: t.String(), version: t.String() });

/** `build` comes from the platform config (APP_COMMIT, APP_TRAIN). */
export function healthRoutes(component: string, clock: Clock, build: { commit?: string; train: string }) {
  const commit = build.commit ?? BUILT_COMMIT;
  return new Elysia({ name: `platform.health.${component}`, detail: { tags: ['probes'] } })
    .get(
      '/health',
      () => ({ status: 'ok' as const, timestamp: clock.now(), uptime: process.uptime(), version: VERSION }),
      { response: HealthSchema, detail: { ...operation('getHealth'), summary: 'Liveness probe', security: [] } },
    )
    .get('/version', () => ({ commit, component, train: build.train, version: VERSION }), {
      response: VersionSchema,
      detail: { ...operation('getVersion'), summary: 'Build version', security: [] },
    });
}
