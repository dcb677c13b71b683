// HTTP wiring of command execution: a JSON result, or SSE output with `stream: true`.
import { toEnvelope } from '../../../platform/errors';
import { Elysia } from 'elysia';
import type { Sse } from '../../../platform/http/sse';
import { EXEC_OUTPUT_MAX_BYTES, EXEC_TIMEOUT_DEFAULT_MS, EXEC_TIMEOUT_MAX_MS, EXIT_TIMED_OUT, ExecBody, ExecEventStream, ExecResult, type ExecResult as ExecResultT } from './exec.model';
import type { ExecService } from './exec.service';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { IdParams } from '../lifecycle/lifecycle.model';
import { WorkspaceErrors, workspaceOperation as op } from '../workspaces.errors';

const SHUTDOWN_EVENT = { event: 'error', data: toEnvelope(WorkspaceErrors.SHUTTING_DOWN('Keel is shutting down; the command was stopped')) };

export function execRoutes(deps: { auth: WorkspaceAuthPlugin; exec: ExecService; sse: Sse }) {
  return new Elysia({ name: 'workspaces.exec' })
    .use(deps.auth)
    .post(
      '/api/workspaces/:id/exec',
      async ({ params, body, actor, request }) => {
        if (body.stream) {
          const stream = deps.sse.open(request);
          const events = await deps.exec.stream(actor, params.id, body, stream.signal);
          // Ending the stream kills the command, as a disconnect does; the client learns why. No backlog:
          // a slow client slows the command down. The cast only satisfies the JSON 200 schema's type.
          return stream.respond(events, { shutdownEvent: SHUTDOWN_EVENT }) as unknown as ExecResultT;
        }
        return deps.exec.run(actor, params.id, body, request.signal);
      },
      {
        params: IdParams,
        body: ExecBody,
        response: { 200: ExecResult },
        detail: { ...op('execCommand', ['WORKSPACE_NOT_FOUND', 'WORKSPACE_NOT_RUNNING', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          tags: ['exec'],
          responses: { 200: ExecEventStream },
          summary: 'Run a command in a running workspace',
          description:
            "`command` runs as `sh -c` as the template's user, in `workdir` (default: the template's). " +
            `\`timeout\` is in milliseconds (default ${EXEC_TIMEOUT_DEFAULT_MS}, at most ${EXEC_TIMEOUT_MAX_MS}); past it the command and every process it started ` +
            `are killed and the answer comes at once with \`exitCode\` ${EXIT_TIMED_OUT} and \`timedOut: true\`. \`duration\` is in milliseconds. ` +
            `stdout and stderr keep ${EXEC_OUTPUT_MAX_BYTES} bytes each (\`stdoutTruncated\`/\`stderrTruncated\` tell when more was written); ` +
            'invalid UTF-8 becomes U+FFFD. A client that disconnects kills the command.\n\n' +
            'With `stream: true` the answer is `text/event-stream` (its events: the 200 response).\n\n' +
            'A command in flight takes one of the actor\'s `APP_QUOTA_EXECS` exec slots; a streaming one also one of its `APP_QUOTA_STREAMS` stream slots. ' +
            'Past either: 429 `QUOTA_EXCEEDED` with `details: {quota, limit}` and nothing runs (admin tokens are exempt). ' +
            'A `workdir` that does not exist is refused as a bad field.',
        },
      },
    );
}
