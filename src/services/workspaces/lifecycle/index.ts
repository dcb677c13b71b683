// The lifecycle feature: workspaces created, started, stopped, deleted and reconciled with the
// engines (lifecycle.service.ts), GET/POST /api/workspaces... (lifecycle.routes.ts), the list's
// cached answers, and the warm pool following public templates.
import type { ResponseCache } from '../../../platform/http/response-cache';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { errorFields, type Logger } from '../../../platform/runtime';
import { createLifecycle, type Lifecycle, type LifecycleDeps } from './lifecycle.service';
import { workspacesRoutes } from './lifecycle.routes';
import * as models from './lifecycle.model';

export function createLifecycleFeature(deps: LifecycleDeps & {
  auth: WorkspaceAuthPlugin;
  lists: ResponseCache;
  /** Calls back when a public template's ready version changes or it goes; returns what stops it. */
  onPublicTemplateChange: (changed: () => void) => () => void;
  log: Logger;
}): Feature<Lifecycle> {
  const workspaces = createLifecycle(deps);
  return {
    service: workspaces,
    routes: workspacesRoutes({ auth: deps.auth, workspaces, lists: deps.lists }),
    models: [models],
    // A public template's new version (or its delete) replaces the warm entries APP_WARM_POOL keeps of it.
    listen: () => deps.onPublicTemplateChange(() => void workspaces.refreshPool().catch((e) => deps.log.warn('warm pool not refreshed', errorFields(e)))),
    // Engine trouble at start-up is logged, not fatal: the API still answers and the event watcher retries.
    start: () => workspaces.startUp().catch((e) => deps.log.warn('start-up reconciliation failed', errorFields(e))),
    stop: () => workspaces.close(),
  };
}
