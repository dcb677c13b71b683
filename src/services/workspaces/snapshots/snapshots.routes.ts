// HTTP wiring of snapshots and forks: routes, schemas and status codes only; the rules live in snapshots.ts
// and lifecycle.service.ts.
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Lifecycle } from '../lifecycle/lifecycle.service';
import { workspaceOperation as op } from '../workspaces.errors';
import { IdParams } from '../lifecycle/lifecycle.model';
import { CreateSnapshotBody, ForkBody, ForkResult, Snapshot, SnapshotDeleted, SnapshotIdParams, SnapshotList } from './snapshots.model';

const QUOTA = 'A non-admin actor holds at most APP_QUOTA_SNAPSHOTS (20) snapshots: past it 429 `QUOTA_EXCEEDED` with `details: {quota: "snapshots", limit}`.';

export function snapshotsRoutes(deps: { auth: WorkspaceAuthPlugin; workspaces: Lifecycle }) {
  const ws = deps.workspaces;
  return new Elysia({ name: 'workspaces.snapshots', detail: { tags: ['snapshots'] } })
    .use(deps.auth)
    .post(
      '/api/workspaces/:id/snapshots',
      async ({ actor, params, body, set }) => {
        const snap = await ws.snapshots.create(actor, params.id, body.name);
        set.status = 201;
        set.headers.location = `/api/snapshots/${snap.id}`;
        return snap;
      },
      {
        params: IdParams,
        body: CreateSnapshotBody,
        response: { 201: Snapshot },
        detail: {
          ...op('createSnapshot', ['WORKSPACE_NOT_FOUND', 'INVALID_TRANSITION', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          summary: "Snapshot a workspace: its container's file system and its volume",
          description:
            'From running, paused or stopped (else 409 `INVALID_TRANSITION`). The container is committed to an image (its processes paused for the ' +
            'moment it takes) and /workspace archived; answers 201 once both exist. Memory and processes are not kept: a workspace made from it boots fresh. ' +
            `${QUOTA} Another actor's workspace answers 404.`,
        },
      },
    )
    .post(
      '/api/workspaces/:id/fork',
      async ({ actor, params, body, set }) => {
        const out = await ws.fork(actor, params.id, body);
        set.status = 201;
        return out;
      },
      {
        params: IdParams,
        body: ForkBody,
        response: { 201: ForkResult },
        detail: {
          ...op('forkWorkspace', ['WORKSPACE_NOT_FOUND', 'WORKSPACE_EXISTS', 'INVALID_TRANSITION', 'QUOTA_EXCEEDED', 'PORT_UNAVAILABLE', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE', 'ISOLATION_UNAVAILABLE']),
          summary: 'Fork a workspace into 1-10 new ones from one snapshot of it',
          description:
            'Takes one snapshot named `name` (listed, counted, deletable once its workspaces are gone), then creates `<name>-1` ... `<name>-<count>` ' +
            'from it (answered `creating`, as any create; same type and autoStopMinutes as the source). Names and the workspace and running quotas are checked ' +
            `for all of them first: 409 \`WORKSPACE_EXISTS\` or 429 \`QUOTA_EXCEEDED\`, and nothing is made. ${QUOTA}`,
        },
      },
    )
    .get('/api/snapshots', async ({ actor }) => ({ snapshots: await ws.snapshots.list(actor) }), {
      response: { 200: SnapshotList },
      detail: { ...op('listSnapshots'), summary: 'List your snapshots (admins: all), oldest first' },
    })
    .get('/api/snapshots/:id', ({ actor, params }) => ws.snapshots.get(actor, params.id), {
      params: SnapshotIdParams,
      response: { 200: Snapshot },
      detail: { ...op('getSnapshot', ['SNAPSHOT_NOT_FOUND']), summary: 'A snapshot (another actor\'s: 404 `SNAPSHOT_NOT_FOUND`)' },
    })
    .delete('/api/snapshots/:id', ({ actor, params }) => ws.snapshots.remove(actor, params.id), {
      params: SnapshotIdParams,
      response: { 200: SnapshotDeleted },
      detail: {
        ...op('deleteSnapshot', ['SNAPSHOT_NOT_FOUND']),
        summary: 'Delete a snapshot: gone from the list at once, its quota slot free',
        description:
          'Answers 200 even while workspaces made from it exist: they keep running and restarting, and its image (and volume archive) ' +
          'stays on the engine until the last of them is deleted, then goes. Without such workspaces the image and archive go at once. ' +
          'Afterwards the snapshot is 404 `SNAPSHOT_NOT_FOUND` and cannot be created from.',
      },
    });
}
