// Schemas of the kept-volume API: what a kept volume shows, the list filter, and the delete answer.
import { t, type Static } from 'elysia';

export const KeptVolume = t.Object({
  name: t.String({ description: 'the engine volume (`keel-ws-ws-...`); DELETE /api/volumes/{name} removes it' }),
  workspaceId: t.String({ description: 'the deleted workspace it belonged to; DELETE /api/volumes/{workspaceId} works too' }),
  owner: t.String({ description: 'the actor it counts against (APP_QUOTA_VOLUMES)' }),
  deletedAt: t.String({ format: 'date-time', description: 'when the delete kept it' }),
});
export type KeptVolume = Static<typeof KeptVolume>;

export const KeptVolumeList = t.Object({ volumes: t.Array(KeptVolume, { description: 'oldest first' }) });

export const VolumeListQuery = t.Object({
  actor: t.Optional(
    t.String({ minLength: 1, maxLength: 256, description: 'admins: only this actor\'s kept volumes (default all); others always see their own' }),
  ),
});

export const VolumeParams = t.Object({ ref: t.String({ minLength: 1, maxLength: 128, description: 'the volume name, or the id of the workspace it belonged to' }) });

export const VolumeDeleted = t.Object({ name: t.String(), workspaceId: t.String(), deleted: t.Literal(true) });
