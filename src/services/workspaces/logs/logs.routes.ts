// HTTP wiring of workspace logs (JSON and live SSE) and of the stream counters admins read.
import { Elysia } from 'elysia';
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { LOG_TAIL_MAX, type LogEntry, LogsEventStream, LogsQuery, LogsResponse, StreamStats } from './logs.model';
import type { LogsService } from './logs.service';
import type { ExecService } from '../exec/exec.service';
import { jsonList } from '../../../platform/http/json-list';
import { IdParams } from '../lifecycle/lifecycle.model';
import { WorkspaceErrors, workspaceOperation as op } from '../workspaces.errors';

export function logsRoutes(deps: { auth: WorkspaceAuthPlugin; logs: LogsService; exec: ExecService; sse: Sse }) {
  return new Elysia({ name: 'workspaces.logs' })
    .use(deps.auth)
    .get(
      '/api/workspaces/:id/logs',
      async ({ params, query, actor, request }) => {
        if (query.follow) {
          const stream = deps.sse.open(request);
          const events = await deps.logs.follow(actor, params.id, query, stream.signal);
          // No backlog rule: events are read as the client reads, and the hub paces the shared engine
          // stream by what each follower left unread (logs.hub.ts drops one that stalls it).
          // A Response passes through Elysia unvalidated; the cast only satisfies the JSON 200 schema's type.
          return stream.respond(events, { shutdownEvent: { event: 'end', data: { reason: 'shutdown' } } }) as unknown as { logs: LogEntry[] };
        }
        // Up to tail x 64 KiB: past 1 MiB, read from the engine and written entry by entry as the client
        // takes them (json-list.ts, logs.read.ts); the cast as for SSE above.
        return jsonList('logs', await deps.logs.snapshot(actor, params.id, query), (e) => e.message.length) as { logs: LogEntry[] };
      },
      {
        params: IdParams,
        query: LogsQuery,
        response: { 200: LogsResponse },
        detail: { ...op('getWorkspaceLogs', ['WORKSPACE_NOT_FOUND', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          tags: ['logs'],
          responses: { 200: LogsEventStream },
          summary: 'Logs of a workspace (JSON, or a live SSE stream with follow=true)',
          description:
            `Each line carries the service that wrote it: \`main\` for the container's main process, else a service the template declares. ` +
            `\`tail\` counts lines after the \`service\` filter (default 50, at most ${LOG_TAIL_MAX}). Logs of a stopped workspace stay readable.\n\n` +
            'With `follow=true` the answer is `text/event-stream` (its events: the 200 response); all followers of one workspace share one engine stream. ' +
            'An open follow takes one of the actor\'s `APP_QUOTA_STREAMS` stream slots until it ends; past the quota: 429 `QUOTA_EXCEEDED` with `details: {quota, limit}`.',
        },
      },
    )
    .get(
      '/api/system/streams',
      ({ actor }) => {
        if (!actor.admin) throw WorkspaceErrors.FORBIDDEN('only admins may read stream counters');
        return { ...deps.logs.stats(), execs: deps.exec.active };
      },
      {
        response: { 200: StreamStats },
        detail: { ...op('getStreamStats', ['FORBIDDEN']),
          tags: ['logs'],
          summary: 'Open engine log streams, log followers and running execs (admins)',
          description: 'Counters of what Keel holds open, so operators and tests can see that closed clients released everything.',
        },
      },
    );
}
