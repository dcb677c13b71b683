// The previews feature: links to a workspace's ports (/api/workspaces/{id}/previews), each served on
// a host name of its own by Keel's second listener (APP_PREVIEW_PORT, previews.proxy.ts). A second
// listener of this service, not a service of its own: links, activity and the proxy all need the
// workspace rows and the engine, which only this service owns.
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { Store } from '../../../platform/store';
import type { Clock, Logger } from '../../../platform/runtime';
import type { Access } from '../access';
import type { Engine } from '../engine/engine';
import type { WorkspacesConfig } from '../workspaces.config';
import { createPreviewProxy } from './previews.proxy';
import { createPreviewRelays } from './previews.relays';
import { createPreviewTargets } from './previews.targets';
import { previewsRoutes } from './previews.routes';
import { createPreviewsService, type PreviewsService } from './previews.service';
import * as models from './previews.model';

export function createPreviewsFeature(deps: {
  store: Store;
  engine: Engine;
  access: Access;
  clock: Clock;
  log: Logger;
  settings: WorkspacesConfig;
  /** The address the preview listener binds. */
  host: string;
  auth: WorkspaceAuthPlugin;
  /** Preview traffic is use of its workspace (../activity.ts). */
  onActivity: (workspaceId: string) => void;
}): Feature<PreviewsService> {
  const { settings, clock, log } = deps;
  // Each preview is a host of its own: APP_PREVIEW_PUBLIC_URL's form, else <label>.<APP_PREVIEW_DOMAIN> on the listener's port.
  let previewPort = settings.previewPort;
  const previewUrl = (label: string) => settings.previewPublicUrl?.replace('{label}', label) ?? `http://${label}.${settings.previewDomain}:${previewPort}/`;
  const relays = createPreviewRelays({ clock });
  const targets = createPreviewTargets({ access: deps.access, engine: deps.engine, clock });
  const previews = createPreviewsService({
    store: deps.store,
    clock,
    access: deps.access,
    urlOf: previewUrl,
    onActivity: deps.onActivity,
    onRevoked: (id) => relays.revoked(id),
  });
  const proxy = createPreviewProxy({ previews, targets, relays, clock, log, proto: settings.previewPublicUrl?.startsWith('https:') ? 'https' : 'http' });
  return {
    service: previews,
    routes: previewsRoutes({ auth: deps.auth, previews }),
    models: [models],
    // A preview's target is looked up again when its workspace starts, stops or goes.
    listen: (bus) => targets.listen(bus),
    start() {
      previewPort = proxy.listen(deps.host, settings.previewPort);
      log.info('preview listener', { url: `http://${deps.host}:${previewPort}`, example: previewUrl('<label>') });
    },
    stop: () => proxy.stop(),
  };
}
