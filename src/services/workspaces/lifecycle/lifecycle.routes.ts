// HTTP wiring of the workspace lifecycle: routes, schemas and status codes only; the rules live in lifecycle.service.ts.
import { Elysia } from 'elysia';
import { conditionalGet, type ResponseCache } from '../../../platform/http/response-cache';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Lifecycle } from './lifecycle.service';
import { listScope } from './views';
import { workspaceOperation as op } from '../workspaces.errors';
import {
  ActionResult,
  CreatedWorkspace,
  CreateWorkspaceBody,
  DeleteQuery,
  DeleteResult,
  IdParams,
  ListQuery,
  QuotaView,
  StopQuery,
  WorkspaceList,
  WorkspaceWithStats,
} from './lifecycle.model';

const QUOTAS =
  'A non-admin actor may hold APP_QUOTA_WORKSPACES workspaces, of which APP_QUOTA_RUNNING creating, starting, restarting, running or paused; past ' +
  'either: 429 `QUOTA_EXCEEDED` with `details: {quota, limit}` (`quota` is `workspaces` or `running`) and nothing is created or started. ' +
  'GET /api/quotas says what the caller uses.';

const TRANSITIONS =
  'Returns at once with the in-progress status; the workspace moves to `running` or `stopped` when the engine reports it ' +
  '(poll GET /api/workspaces/{id}). A move the current status does not allow answers 409 `INVALID_TRANSITION` with ' +
  '`details.status` and `details.allowedFrom`. While the workspace\'s engine does not answer: 503 `ENGINE_UNAVAILABLE` with Retry-After, nothing moved. If Keel is killed before the move completes, the next start-up finishes it ' +
  '(a stop stops, a start or restart starts) or ends the workspace `failed` with `reason`; no workspace stays in progress.';

/** What start, stop and restart share: the id in, the in-progress status out, 409 for a move not allowed. */
const transition = {
  params: IdParams,
  response: { 200: ActionResult },
};

const listConditional = conditionalGet('the list');

/**
 * `lists` keeps the serialised list per actor and filter (platform/http/response-cache.ts): the
 * answer is rebuilt after any write, and the schema below stays the contract (OpenAPI, tests) rather
 * than being checked again on every answer.
 */
export function workspacesRoutes(deps: { auth: WorkspaceAuthPlugin; workspaces: Lifecycle; lists: ResponseCache }) {
  const ws = deps.workspaces;
  return new Elysia({ name: 'workspaces.lifecycle', detail: { tags: ['workspaces'] } })
    .use(deps.auth)
    .get(
      '/api/workspaces',
      ({ actor, query, request, set }) =>
        deps.lists.answer(request, set, listScope(actor), `${query.status ?? ''}|${query.type ?? ''}`, async () => ({ workspaces: await ws.list(actor, query) })),
      {
        query: ListQuery,
        headers: listConditional.headers,
        response: { 200: WorkspaceList },
        detail: { ...op('listWorkspaces'),
          responses: listConditional.responses,
          summary: 'List your workspaces (admins: all), oldest first, optionally filtered by status and type',
          description:
            'Answers carry a strong `ETag` and `Cache-Control: private, no-cache`. Send it back in `If-None-Match` to get 304 Not ' +
            'Modified without a body while the list is unchanged; any change to a workspace (create, start, stop, delete, a status ' +
            'the engine reports) changes the answer on the next request.',
        },
      },
    )
    .post(
      '/api/workspaces',
      async ({ actor, body, set }) => {
        const created = await ws.create(actor, body);
        set.status = 201;
        set.headers.location = `/api/workspaces/${created.id}`;
        return created;
      },
      {
        body: CreateWorkspaceBody,
        response: { 201: CreatedWorkspace },
        detail: { ...op('createWorkspace', ['WORKSPACE_EXISTS', 'PORT_UNAVAILABLE', 'TEMPLATE_NOT_FOUND', 'TEMPLATE_NOT_READY', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE', 'CLONE_QUEUE_FULL', 'ISOLATION_UNAVAILABLE']),
          summary: 'Create a workspace',
          description:
            'Answers 201 with status `creating`; the image is made ready (the `minimal` image is built offline on first use), the volume ' +
            'and container are created, `repo` is cloned into /workspace on the Keel host, and the workspace starts. With a warm pool for ' +
            'the template (APP_WARM_POOL) and no `port`, `repo` or `snapshot`, a container made ahead is claimed and the answer is 201 ' +
            'with status `running` (docs/workspaces.md, "Warm pool"). Any failure ends in ' +
            'status `failed` with `reason`. 409 `WORKSPACE_EXISTS` when the name is taken (names are unique across all owners), 409 ' +
            '`PORT_UNAVAILABLE` when `port` is reserved by another workspace or held by any process on the host, 400 `INVALID_REQUEST` ' +
            'for a malformed body, a template name no one has, a `port` outside APP_WORKSPACE_PORT_RANGE (admins excepted), a repo URL that is not ' +
            'http://, https:// or git://, or a repo host that is an IP literal in a link-local or metadata range (any spelling). ' +
            '`template` is a built-in, your own template or a public one (docs/templates.md): another actor\'s private template is 404 ' +
            '`TEMPLATE_NOT_FOUND`, one with no built version yet (or whose image is being made again) 409 `TEMPLATE_NOT_READY`. ' +
            '503 `ENGINE_UNAVAILABLE` (with Retry-After) when no container engine answers, 503 `CLONE_QUEUE_FULL` (with Retry-After) when too many ' +
            'repo clones run or wait (APP_CLONE_CONCURRENCY, APP_CLONE_QUEUE): nothing is created, retry later. ' +
            `${QUOTAS} ` +
            '503 `ISOLATION_UNAVAILABLE` when Keel cannot firewall workspace networks here and APP_WORKSPACE_FIREWALL=required (docs/security.md): nothing is created. ' +
            'A creation cut short by a crash of Keel is finished when Keel starts again (see docs/workspaces.md, "Crash recovery").',
        },
      },
    )
    .get('/api/workspaces/:id', ({ actor, params }) => ws.get(actor, params.id), {
      params: IdParams,
      response: { 200: WorkspaceWithStats },
      detail: { ...op('getWorkspace', ['WORKSPACE_NOT_FOUND']), summary: 'A workspace with its URLs and live stats (cpu, memory used / limit, disk used / total)' },
    })
    .post('/api/workspaces/:id/start', ({ actor, params }) => ws.start(actor, params.id), {
      ...transition,
      detail: { ...op('startWorkspace', ['WORKSPACE_NOT_FOUND', 'INVALID_TRANSITION', 'QUOTA_EXCEEDED', 'ENGINE_UNAVAILABLE']),
        summary: 'Start a stopped (or failed) workspace',
        description: `From stopped or failed (a container removed outside Keel is recreated over the kept volume). ${TRANSITIONS} ${QUOTAS}`,
      },
    })
    .post('/api/workspaces/:id/stop', ({ actor, params, query }) => ws.stop(actor, params.id, query.force ?? false), {
      ...transition,
      query: StopQuery,
      detail: { ...op('stopWorkspace', ['WORKSPACE_NOT_FOUND', 'INVALID_TRANSITION', 'ENGINE_UNAVAILABLE']),
        summary: 'Stop a workspace (force=true: SIGKILL)',
        description: `From running, starting, restarting or paused (force also from stopping). SIGTERM, then SIGKILL after the grace period. A temporary workspace is deleted with its volume once stopped. ${TRANSITIONS}`,
      },
    })
    .post('/api/workspaces/:id/restart', ({ actor, params }) => ws.restart(actor, params.id), {
      ...transition,
      detail: { ...op('restartWorkspace', ['WORKSPACE_NOT_FOUND', 'INVALID_TRANSITION', 'QUOTA_EXCEEDED', 'ENGINE_UNAVAILABLE']), summary: 'Restart a workspace', description: `From running or stopped. ${TRANSITIONS} A restart from stopped takes a running place. ${QUOTAS}` },
    })
    .post('/api/workspaces/:id/pause', ({ actor, params }) => ws.pause(actor, params.id), {
      ...transition,
      response: { ...transition.response },
      detail: { ...op('pauseWorkspace', ['WORKSPACE_NOT_FOUND', 'INVALID_TRANSITION', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
        summary: 'Pause a running workspace (docker pause)',
        description:
          'From running. Every process is frozen (no CPU), memory and state are kept, and the workspace still counts against APP_QUOTA_RUNNING. ' +
          'Answers once done with `{id, status: "paused"}` and sends `workspace.paused`; exec, logs and agent turns answer 409 `WORKSPACE_NOT_RUNNING` while paused. ' +
          'A move the current status does not allow answers 409 `INVALID_TRANSITION`. Stop and delete work from paused.',
      },
    })
    .post('/api/workspaces/:id/resume', ({ actor, params }) => ws.resume(actor, params.id), {
      ...transition,
      response: { ...transition.response },
      detail: { ...op('resumeWorkspace', ['WORKSPACE_NOT_FOUND', 'INVALID_TRANSITION', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
        summary: 'Resume a paused workspace (docker unpause)',
        description:
          'From paused. The processes continue where they were; answers once done with `{id, status: "running"}` (milliseconds) and sends `workspace.resumed`. ' +
          'A move the current status does not allow answers 409 `INVALID_TRANSITION`.',
      },
    })
    .get('/api/quotas', ({ actor }) => ws.quotas(actor), {
      response: { 200: QuotaView },
      detail: { ...op('getQuotas'),
        summary: "The caller's quotas and what it uses of each",
        description:
          'Limits per actor (APP_QUOTA_WORKSPACES, APP_QUOTA_RUNNING, APP_QUOTA_EXECS, APP_QUOTA_STREAMS, APP_QUOTA_VOLUMES) and current use. Admin tokens are ' +
          '`exempt`: no quota applies to them. Past a quota an operation answers 429 `QUOTA_EXCEEDED` with `details: {quota, limit}`.',
      },
    })
    .delete('/api/workspaces/:id', ({ actor, params, query }) => ws.remove(actor, params.id, query.volumes ?? false), {
      params: IdParams,
      query: DeleteQuery,
      response: { 200: DeleteResult },
      detail: { ...op('deleteWorkspace', ['WORKSPACE_NOT_FOUND', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
        summary: 'Delete a workspace (volumes=true: its volume too)',
        description:
          'Removes the container and the workspace from any status; waits for an operation in flight (a repo clone in flight is cancelled). A persistent workspace\'s volume is ' +
          'kept unless volumes=true (listed by GET /api/volumes, counted against APP_QUOTA_VOLUMES: a delete that would keep one more answers 429 `QUOTA_EXCEEDED` ' +
          'with `details.quota: "volumes"` and deletes nothing); a temporary workspace\'s volume always goes. 502 `ENGINE_ERROR` when the engine refuses, 503 `ENGINE_UNAVAILABLE` when none answers (the workspace is kept).',
      },
    });
}
