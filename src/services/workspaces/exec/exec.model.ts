// Schemas of the exec API: the request, the result and the streaming events.
import { t, type Static } from 'elysia';
import { ErrorEnvelope } from '../../../platform/http/errors';

export const EXEC_TIMEOUT_DEFAULT_MS = 30_000;
export const EXEC_TIMEOUT_MAX_MS = 600_000;
/** Bytes of each of stdout and stderr kept in a (non-streaming) result. */
export const EXEC_OUTPUT_MAX_BYTES = 1024 * 1024;
export const EXEC_ENV_MAX = 64;
/** Exit code of a command killed at its timeout (as coreutils' timeout(1)). */
export const EXIT_TIMED_OUT = 124;

export const ExecBody = t.Object(
  {
    command: t.String({ minLength: 1, maxLength: 65536, description: 'run by `sh -c` in the workspace' }),
    workdir: t.Optional(
      t.String({ minLength: 1, maxLength: 4096, pattern: '^/[^\\u0000]*$', description: "absolute directory; default: the template's working directory" }),
    ),
    timeout: t.Optional(
      t.Integer({
        minimum: 1,
        maximum: EXEC_TIMEOUT_MAX_MS,
        default: EXEC_TIMEOUT_DEFAULT_MS,
        description: `milliseconds; past it the command and every process it started are killed (exitCode ${EXIT_TIMED_OUT}, timedOut true)`,
      }),
    ),
    env: t.Optional(
      t.Record(t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }), t.String({ maxLength: 32768, pattern: '^[^\\u0000]*$' }), {
        maxProperties: EXEC_ENV_MAX,
        additionalProperties: false,
        description: 'extra environment variables (names: letters, digits, _; not starting with a digit)',
      }),
    ),
    stream: t.Optional(
      t.Boolean({
        default: false,
        description:
          'true: answer text/event-stream with `event: stdout` / `event: stderr` (data {"data": "<text>"}) as output arrives, ' +
          'then one `event: exit` (data: the Exec result without stdout/stderr) or `event: error` (data: the error body)',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ command: 'echo hello from $(hostname)', workdir: '/workspace', timeout: 10000, env: { GREETING: 'hi' } }] },
);
export type ExecInput = Static<typeof ExecBody>;

export const ExecResult = t.Object({
  // t.Number, not t.Integer: Elysia's t.Integer also admits numeric strings (for queries), which
  // OpenAPI would show as `string | number`.
  exitCode: t.Number({ multipleOf: 1, description: `the command's exit status; ${EXIT_TIMED_OUT} at the timeout` }),
  stdout: t.String({ description: `UTF-8; invalid bytes become U+FFFD; at most ${EXEC_OUTPUT_MAX_BYTES} bytes` }),
  stderr: t.String({ description: `UTF-8; invalid bytes become U+FFFD; at most ${EXEC_OUTPUT_MAX_BYTES} bytes` }),
  duration: t.Number({ description: 'milliseconds' }),
  timedOut: t.Boolean(),
  stdoutTruncated: t.Boolean(),
  stderrTruncated: t.Boolean(),
}, { examples: [{ exitCode: 0, stdout: 'hello from demo\n', stderr: '', duration: 54, timedOut: false, stdoutTruncated: false, stderrTruncated: false }] });
export type ExecResult = Static<typeof ExecResult>;

/** The `exit` event of a streaming exec: the result without the output. */
export const ExecExit = t.Pick(ExecResult, ['exitCode', 'duration', 'timedOut']);
export type ExecExit = Static<typeof ExecExit>;

const output = t.Object({ data: t.String({ description: 'UTF-8 text as it arrives' }) });

/** The events of a streaming exec as data: what a client reads from each `event:` and `data:`. */
export const ExecEventSchema = t.Union(
  [
    t.Object({ event: t.Literal('stdout'), data: output }),
    t.Object({ event: t.Literal('stderr'), data: output }),
    t.Object({ event: t.Literal('exit'), data: ExecExit }),
    t.Object({ event: t.Literal('error'), data: ErrorEnvelope }),
  ],
  { description: 'One Server-Sent Event of a streaming exec: `event` is its event line, `data` the JSON of its data line' },
);

/** The `stream: true` answer, for OpenAPI: SSE has no schema of its own, so a described string. */
export const ExecEventStream = {
  description: 'The Exec result; with `stream: true` a text/event-stream',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string' as const,
        description:
          'Server-Sent Events. `event: stdout` and `event: stderr` with data `{"data":"<text>"}` as output arrives (no size cap; ' +
          'a slow client slows the command down), then exactly one `event: exit` with data `{exitCode, duration, timedOut}` or ' +
          '`event: error` with data the error body (code SHUTTING_DOWN when Keel shuts down, which kills the command).',
      },
      'x-event-schema': ExecEventSchema,
      example:
        ': connected\n\n' +
        'event: stdout\ndata: {"data":"hello\\n"}\n\n' +
        'event: stderr\ndata: {"data":"oops\\n"}\n\n' +
        'event: exit\ndata: {"exitCode":0,"duration":12,"timedOut":false}\n\n',
    },
  },
};

