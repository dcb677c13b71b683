// Schemas of the logs API: the Log entry, the logs query and the stream counters.
import { t, type Static } from 'elysia';
import { ErrorEnvelope } from '../../../platform/http/errors';

export const LOG_TAIL_DEFAULT = 50;
export const LOG_TAIL_MAX = 5000;
/** Bytes a follower may leave unread before the workspace's shared engine stream waits for it (logs.hub.ts). */
export const FOLLOWER_AHEAD_MAX = 256 * 1024;
/** How long the shared stream waits for a follower that takes nothing; then the follower is dropped. */
export const FOLLOWER_STALL_MS = 10_000;
/** Live lines a follower holds while its tail is read, at most (the stream waits past FOLLOWER_AHEAD_MAX; this is the bound). */
export const FOLLOWER_BACKLOG_MAX = 1024 * 1024;
/** Characters of log text read or followed between two full garbage collections (platform/churn.ts). */
export const LOG_CHURN_COLLECT_CHARS = 1024 * 1024;
/** The last event of a follower dropped as a slow reader. */
export const FOLLOWER_DROP_EVENT = {
  event: 'dropped',
  data: { reason: 'slow-reader', message: `the client read nothing for ${FOLLOWER_STALL_MS / 1000} s while the log waited for it; reconnect to resume` },
};

export const LogLevelSchema = t.Union([t.Literal('debug'), t.Literal('info'), t.Literal('warn'), t.Literal('error')], {
  description:
    'stdout -> info; stderr -> error when the line names an error (error, fatal, panic, exception, traceback, critical), else warn; ' +
    'a JSON object line keeps its own `level` (or lvl, severity, levelname; pino numbers too) and `msg`/`message`',
});
export type LogLevel = Static<typeof LogLevelSchema>;

export const LogEntry = t.Object({
  timestamp: t.String({ format: 'date-time', description: 'when the engine received the line (ISO 8601 UTC, ms)' }),
  service: t.String({ description: '`main` for the container\'s main process, else the name of a service the template declares' }),
  level: LogLevelSchema,
  message: t.String({
    description:
      'at most 64 KiB (65,536 bytes) of UTF-8: a longer line arrives as consecutive entries, in order, cut between characters, ' +
      'with the same timestamp, service and level; their messages joined are the line',
  }),
});
export type LogEntry = Static<typeof LogEntry>;

export const LogsQuery = t.Object({
  tail: t.Optional(
    t.Integer({ minimum: 0, maximum: LOG_TAIL_MAX, default: LOG_TAIL_DEFAULT, description: `last entries to return (after the service filter; a line longer than 64 KiB is several); 0-${LOG_TAIL_MAX}` }),
  ),
  follow: t.Optional(
    t.Boolean({
      default: false,
      description:
        'true: answer text/event-stream; the tail first, then each new line, one `data:` line of JSON Log entry per event; ' +
        '`: keep-alive` comments while idle; a final `event: end` ({reason: stopped|deleted|not-running|shutdown}) ' +
        'or `event: dropped` ({reason: slow-reader}) or `event: error` (the error body) before the stream closes',
    }),
  ),
  service: t.Optional(t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$', description: 'only lines of this service (`main` = the main process)' })),
});
export type LogsQuery = Static<typeof LogsQuery>;

export const LogsResponse = t.Object({ logs: t.Array(LogEntry) });

/** The events of a log follow as data: what a client reads from each `event:` and `data:`. */
export const LogEventSchema = t.Union(
  [
    t.Object({ event: t.Literal('message', { description: 'no event line: SSE calls it message' }), data: LogEntry }),
    t.Object({ event: t.Literal('end'), data: t.Object({ reason: t.Union([t.Literal('stopped'), t.Literal('deleted'), t.Literal('not-running'), t.Literal('shutdown')]) }) }),
    t.Object({ event: t.Literal('dropped'), data: t.Object({ reason: t.Literal('slow-reader'), message: t.String() }) }),
    t.Object({ event: t.Literal('error'), data: ErrorEnvelope }),
  ],
  { description: 'One Server-Sent Event of a log follow: `event` is its event line, `data` the JSON of its data line' },
);

/** The follow=true answer, for OpenAPI: SSE has no schema of its own, so a described string. */
export const LogsEventStream = {
  description: 'JSON with `logs`; with follow=true a text/event-stream',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string' as const,
        description:
          'Server-Sent Events. First the tail, then each new line: an event without a name whose one `data:` line is a JSON Log entry. ' +
          'Idle streams get `: keep-alive` comments. A restart of the workspace does not end the stream. It ends with one of ' +
          '`event: end` (data `{"reason":"stopped"|"deleted"|"not-running"|"shutdown"}`), ' +
          '`event: dropped` (data `{"reason":"slow-reader","message":...}`: the stream waited for this client, which read nothing for 10 s) or ' +
          '`event: error` (data: the error body, the engine failed).',
      },
      'x-event-schema': LogEventSchema,
      example:
        ': connected\n\n' +
        'data: {"timestamp":"2026-01-05T10:00:00.000Z","service":"main","level":"info","message":"keel: workspace ready"}\n\n' +
        ': keep-alive\n\n' +
        'event: end\ndata: {"reason":"stopped"}\n\n',
    },
  },
};

/** A count in a response: a plain number in OpenAPI (Elysia's t.Integer also admits numeric strings, for queries). */
const Count = (description?: string) => t.Number({ multipleOf: 1, minimum: 0, description });

export const StreamStats = t.Object({
  engineStreams: Count('engine log streams Keel holds open (one per followed workspace, plus reads in progress)'),
  followers: Count('open follow=true log streams'),
  execs: Count('exec processes Keel is waiting on'),
  workspaces: t.Array(t.Object({ workspaceId: t.String(), followers: Count() })),
});
export type StreamStats = Static<typeof StreamStats>;
