// HTTP wiring of processes: start, list, status, output (JSON or SSE with replay), stdin, signals.
import { Elysia } from 'elysia';
import type { Sse } from '../../../platform/http/sse';
import { lastEventId } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { IdParams } from '../lifecycle/lifecycle.model';
import { workspaceOperation as op } from '../workspaces.errors';
import { OutputQuery, ProcessBody, ProcessEventStream, ProcessList, ProcessOutput, ProcessParams, ProcessView, SignalBody, Signalled, StdinBody, StdinQuery, StdinWritten } from './processes.model';
import type { ProcessesService } from './processes.service';

const STDIN_PATH = /^\/api\/workspaces\/[^/]+\/processes\/[^/]+\/stdin$/;

/** POST .../stdin streams its raw body into the process: the service app must not buffer it. */
export const streamedStdin = (request: Request) => request.method === 'POST' && STDIN_PATH.test(new URL(request.url).pathname);

export function processesRoutes(deps: { auth: WorkspaceAuthPlugin; processes: ProcessesService; sse: Sse }) {
  const { processes } = deps;
  return new Elysia({ name: 'workspaces.processes' })
    .use(deps.auth)
    .post(
      '/api/workspaces/:id/processes',
      async ({ params, body, actor, set }) => {
        const started = await processes.start(actor, params.id, body);
        set.status = 201;
        return started;
      },
      {
        params: IdParams,
        body: ProcessBody,
        response: { 201: ProcessView },
        detail: {
          tags: ['processes'],
          ...op('startWorkspaceProcess', ['WORKSPACE_NOT_FOUND', 'WORKSPACE_NOT_RUNNING', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          summary: 'Start a command that outlives the request',
          description:
            "`command` runs as `sh -c` as the template's user, in `workdir`, with its stdin open (POST .../stdin). It runs until it ends or is signalled, " +
            'whoever follows it; its output is kept (the last `APP_PROCESS_OUTPUT_BYTES` of each stream). A running process takes one of the actor\'s ' +
            '`APP_QUOTA_PROCESSES` slots (default 16; admins exempt); past it 429 `QUOTA_EXCEEDED` with `details: {quota: "processes", limit}`.',
        },
      },
    )
    .get('/api/workspaces/:id/processes', async ({ params, actor }) => ({ processes: await processes.list(actor, params.id) }), {
      params: IdParams,
      response: { 200: ProcessList },
      detail: { ...op('listWorkspaceProcesses', ['WORKSPACE_NOT_FOUND']), tags: ['processes'], summary: "The workspace's processes, newest first (at most 500)" },
    })
    .get('/api/workspaces/:id/processes/:pid', ({ params, actor }) => processes.get(actor, params.id, params.pid), {
      params: ProcessParams,
      response: { 200: ProcessView },
      detail: {
        tags: ['processes'],
        ...op('getWorkspaceProcess', ['WORKSPACE_NOT_FOUND', 'PROCESS_NOT_FOUND']),
        summary: 'A process: running, exited (with exitCode and endedAt) or lost',
        description: '`lost`: Keel restarted while the process ran and no longer follows it.',
      },
    })
    .get(
      '/api/workspaces/:id/processes/:pid/output',
      async ({ params, query, actor, request }) => {
        if (!query.follow) return processes.output(actor, params.id, params.pid);
        const after = Number(lastEventId(request) ?? 0);
        const stream = deps.sse.open(request);
        const events = await processes.follow(actor, params.id, params.pid, Number.isSafeInteger(after) ? after : 0, stream.signal);
        // Following never touches the process: a client that leaves only ends its own stream.
        return stream.respond(events) as unknown as { stdout: string; stderr: string };
      },
      {
        params: ProcessParams,
        query: OutputQuery,
        response: { 200: ProcessOutput },
        detail: {
          tags: ['processes'],
          ...op('readWorkspaceProcessOutput', ['WORKSPACE_NOT_FOUND', 'PROCESS_NOT_FOUND', 'QUOTA_EXCEEDED']),
          responses: { 200: ProcessEventStream },
          summary: 'Output kept so far, or followed as SSE with ids (follow=true; Last-Event-ID replays after that id)',
          description:
            'Without `follow`: `{stdout, stderr}`, the last `APP_PROCESS_OUTPUT_BYTES` of each. With `follow=true`: `text/event-stream` (see the 200 response); ' +
            'an open follow holds one of the actor\'s `APP_QUOTA_STREAMS` slots. A client that disconnects leaves the process running and its output kept.',
        },
      },
    )
    .post('/api/workspaces/:id/processes/:pid/stdin', ({ params, query, actor, request }) => processes.stdin(actor, params.id, params.pid, request.body, query.eof === true), {
      params: ProcessParams,
      query: StdinQuery,
      response: { 200: StdinWritten },
      detail: {
        tags: ['processes'],
        requestBody: StdinBody,
        ...op('writeWorkspaceProcessStdin', ['WORKSPACE_NOT_FOUND', 'PROCESS_NOT_FOUND', 'PROCESS_NOT_RUNNING']),
        summary: "Write the raw request body to the process's stdin (eof=true closes it after)",
        description: 'Streamed as it arrives (any size, any content type).',
      },
    })
    .post('/api/workspaces/:id/processes/:pid/signal', ({ params, body, actor }) => processes.signal(actor, params.id, params.pid, body.signal), {
      params: ProcessParams,
      body: SignalBody,
      response: { 200: Signalled },
      detail: {
        tags: ['processes'],
        ...op('signalWorkspaceProcess', ['WORKSPACE_NOT_FOUND', 'PROCESS_NOT_FOUND', 'PROCESS_NOT_RUNNING', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
        summary: 'Send TERM, KILL, INT or HUP to the process and everything it started',
      },
    });
}
