// Schemas of the processes API: start, the process view, its output, stdin and signals.
import { t, type Static } from 'elysia';

/** Bytes of each of stdout and stderr a process keeps (the last ones). */
export const PROCESS_OUTPUT_DEFAULT_BYTES = 1024 * 1024;

export const ProcessBody = t.Object(
  {
    command: t.String({ minLength: 1, maxLength: 65536, description: 'run by `sh -c` in the workspace, as the template\'s user' }),
    workdir: t.Optional(t.String({ minLength: 1, maxLength: 4096, pattern: '^/[^\\u0000]*$', description: "absolute directory; default: the template's working directory" })),
    env: t.Optional(
      t.Record(t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }), t.String({ maxLength: 32768, pattern: '^[^\\u0000]*$' }), {
        maxProperties: 64,
        additionalProperties: false,
        description: 'extra environment variables',
      }),
    ),
    name: t.Optional(t.String({ minLength: 1, maxLength: 128, pattern: '^[^\\u0000-\\u001f]+$', description: 'a label for people' })),
  },
  { additionalProperties: false },
);
export type ProcessInput = Static<typeof ProcessBody>;

export const ProcessView = t.Object({
  id: t.String(),
  name: t.Optional(t.String()),
  command: t.String(),
  status: t.Union([t.Literal('running'), t.Literal('exited'), t.Literal('lost')], {
    description: '`lost`: Keel restarted while it ran, and no longer follows it (its output and exit are unknown)',
  }),
  startedAt: t.String({ format: 'date-time' }),
  exitCode: t.Optional(t.Number({ multipleOf: 1 })),
  endedAt: t.Optional(t.String({ format: 'date-time' })),
});
export type ProcessView = Static<typeof ProcessView>;

export const ProcessList = t.Object({ processes: t.Array(ProcessView) });

export const ProcessParams = t.Object({ id: t.String({ maxLength: 64 }), pid: t.String({ maxLength: 64 }) });

export const OutputQuery = t.Object({ follow: t.Optional(t.BooleanString({ default: false })) }, { additionalProperties: false });

export const ProcessOutput = t.Object({
  stdout: t.String({ description: 'the last APP_PROCESS_OUTPUT_BYTES bytes written, UTF-8' }),
  stderr: t.String({ description: 'the last APP_PROCESS_OUTPUT_BYTES bytes written, UTF-8' }),
});

export const StdinQuery = t.Object({ eof: t.Optional(t.BooleanString({ default: false, description: 'true: close the process\'s stdin after this body' })) }, { additionalProperties: false });
export const StdinWritten = t.Object({ id: t.String(), bytes: t.Number({ multipleOf: 1 }) });

export const SignalBody = t.Object({ signal: t.Union([t.Literal('TERM'), t.Literal('KILL'), t.Literal('INT'), t.Literal('HUP')]) }, { additionalProperties: false });
export const Signalled = t.Object({ id: t.String(), signalled: t.Literal(true) });

export const ProcessEventStream = {
  description: 'The output kept so far; with `follow=true` a text/event-stream',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string' as const,
        description:
          'Server-Sent Events, each with an `id:`. `event: stdout` and `event: stderr` with data `{"data":"<text>"}`: first what is kept ' +
          '(after `Last-Event-ID` when sent), then as written; then one `event: exit` with data `{"exitCode": n}` ' +
          '(`{"exitCode": null, "status": "lost"}` for a lost process).',
      },
      example: 'id: 1\nevent: stdout\ndata: {"data":"listening on 8080\\n"}\n\nid: 2\nevent: exit\ndata: {"exitCode":0}\n\n',
    },
  },
};

/** The raw body of POST .../stdin in the OpenAPI (streamed into the process as it arrives). */
export const StdinBody = {
  required: false,
  description: "bytes written to the process's stdin",
  content: { 'application/octet-stream': { schema: { type: 'string' as const, format: 'binary' as const } } },
};
