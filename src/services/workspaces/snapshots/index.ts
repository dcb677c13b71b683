// The snapshots feature: /api/snapshots and forks. Its service lives in the lifecycle (snapshots are
// taken on a workspace's task queue, and forks create workspaces): the routes reach it there.
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { Lifecycle } from '../lifecycle/lifecycle.service';
import { snapshotsRoutes } from './snapshots.routes';
import * as models from './snapshots.model';

export function createSnapshotsFeature(deps: { auth: WorkspaceAuthPlugin; workspaces: Lifecycle }): Feature<Lifecycle['snapshots']> {
  return { service: deps.workspaces.snapshots, routes: snapshotsRoutes(deps), models: [models] };
}
