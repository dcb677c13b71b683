// The events feature: workspace events, live (GET /api/events), from a ring of the latest.
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { Clock } from '../../../platform/runtime';
import type { Quotas } from '../quotas';
import { eventsRoutes } from './events.routes';
import { createWorkspaceEvents, type WorkspaceEvents } from './events.service';
import * as models from './events.model';

export function createEventsFeature(deps: { clock: Clock; quotas: Quotas; auth: WorkspaceAuthPlugin; sse: Sse }): Feature<WorkspaceEvents> {
  const events = createWorkspaceEvents({ clock: deps.clock, quotas: deps.quotas });
  return { service: events, routes: eventsRoutes({ auth: deps.auth, events, sse: deps.sse }), models: [models], listen: (bus) => events.listen(bus) };
}
