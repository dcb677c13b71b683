// HTTP wiring of kept volumes: routes, schemas and status codes only; the rules live in volumes.service.ts.
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Volumes } from './volumes.service';
import { KeptVolumeList, VolumeDeleted, VolumeListQuery, VolumeParams } from './volumes.model';
import { workspaceOperation as op } from '../workspaces.errors';

const KEPT =
  'DELETE /api/workspaces/{id} without `volumes=true` keeps a persistent workspace\'s volume. Each kept volume counts against its owner\'s ' +
  'APP_QUOTA_VOLUMES (default 20): a delete that would keep one more answers 429 `QUOTA_EXCEEDED` with `details: {quota: "volumes", limit}` and ' +
  'deletes nothing (`volumes=true` still works). Another actor\'s kept volume answers 404 `VOLUME_NOT_FOUND`.';

export function volumesRoutes(deps: { auth: WorkspaceAuthPlugin; volumes: Volumes }) {
  const vols = deps.volumes;
  return new Elysia({ name: 'workspaces.volumes', detail: { tags: ['volumes'] } })
    .use(deps.auth)
    .get('/api/volumes', async ({ actor, query }) => ({ volumes: await vols.list(actor, query) }), {
      query: VolumeListQuery,
      response: { 200: KeptVolumeList },
      detail: { ...op('listVolumes'), summary: 'List your kept volumes (admins: all, or one actor\'s with ?actor=), oldest first', description: KEPT },
    })
    .delete('/api/volumes/:ref', ({ actor, params }) => vols.remove(actor, params.ref), {
      params: VolumeParams,
      response: { 200: VolumeDeleted },
      detail: { ...op('deleteVolume', ['VOLUME_NOT_FOUND', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
        summary: 'Remove a kept volume, by name or by the id of the workspace it belonged to',
        description: `Removes the volume from the engine (its data is gone) and frees its place in the quota. ${KEPT} 502 \`ENGINE_ERROR\` when the engine refuses (the volume stays listed), 503 \`ENGINE_UNAVAILABLE\` when none answers.`,
      },
    });
}
