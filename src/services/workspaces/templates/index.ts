// The templates people bring (POST /api/templates...): builds, versions, their images on the engines.
import type { Bus } from '../../../platform/bus/bus';
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { Store } from '../../../platform/store';
import { errorFields, type Logger } from '../../../platform/runtime';
import { createTemplatesRepository } from './templates.repository';
import { customTemplatesRoutes } from './templates.routes';
import { createCustomTemplates, type CustomTemplates } from './templates.service';
import * as models from './templates.model';

type Deps = Omit<Parameters<typeof createCustomTemplates>[0], 'repo' | 'inUse'> & {
  store: Store;
  auth: WorkspaceAuthPlugin;
  sse: Sse;
  snapshotSource: Parameters<typeof customTemplatesRoutes>[0]['snapshotSource'];
};

export function createTemplatesFeature({ store, auth, sse, snapshotSource, ...deps }: Deps): Feature<CustomTemplates> {
  const repo = createTemplatesRepository(store);
  // A version's image goes once no workspace row names it (its own query: no call into the lifecycle).
  const templates = createCustomTemplates({ ...deps, repo, inUse: repo.versionsInUse });
  const log: Logger = deps.log;
  return {
    service: templates,
    routes: customTemplatesRoutes({ auth, templates, sse, contextBytes: deps.settings.templates.contextBytes, snapshotSource }),
    models: [models],
    // A workspace gone may leave a template version's image that nobody gets any more.
    listen: (bus: Bus) => bus.subscribe<'evt.workspace.deleted'>('evt.workspace.deleted', () => void templates.collect()),
    // Built template versions join the registry before workspaces start from them; unfinished builds run again.
    start: () => templates.start().catch((e) => log.warn('templates not loaded', errorFields(e))),
  };
}
