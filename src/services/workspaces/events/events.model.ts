// The workspace event stream's OpenAPI description: SSE has no schema of its own, so a described string
// beside the schema of its events.
import { t } from 'elysia';
/** Bytes a follower may leave unread before it is dropped: the bus does not wait for slow readers. */
export const EVENTS_BACKLOG = {
  maxBytes: 256 * 1024,
  dropEvent: { event: 'dropped', data: { reason: 'slow-reader', message: 'the client left more than 256 KiB unread; reconnect with Last-Event-ID' } },
};

export const EVENTS_SHUTDOWN = { event: 'end', data: { reason: 'shutdown' } };

const eventId = t.String({ pattern: '^[0-9]+$', description: 'the `id:` line; send the last one seen as Last-Event-ID to resume' });

/** The events of GET /api/events as data: what a client reads from each `event:`, `id:` and `data:`. */
export const WorkspaceStreamEventSchema = t.Union(
  [
    t.Object({
      event: t.Literal('workspace'),
      id: eventId,
      data: t.Object({
        event: t.String({ description: 'workspace.created, workspace.started, workspace.stopped, workspace.failed, workspace.deleted, ...' }),
        timestamp: t.String({ description: 'ISO 8601 UTC' }),
        owner: t.String(),
        workspace: t.Object({ id: t.String(), name: t.String(), status: t.String(), reason: t.Optional(t.String()) }),
      }),
    }),
    t.Object({ event: t.Literal('ready'), id: eventId, data: t.Object({}) }),
    t.Object({ event: t.Literal('reset'), data: t.Object({ reason: t.Literal('unknown-event-id') }) }),
    t.Object({ event: t.Literal('end'), data: t.Object({ reason: t.Literal('shutdown') }) }),
    t.Object({ event: t.Literal('dropped'), data: t.Object({ reason: t.Literal('slow-reader'), message: t.String() }) }),
  ],
  { description: 'One Server-Sent Event of the workspace event stream: `event` is its event line, `id` its id line, `data` the JSON of its data line' },
);

export const EventsStream = {
  description: 'A text/event-stream of workspace events',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string' as const,
        description:
          'Server-Sent Events. Each change of a workspace the caller owns (admins: every workspace) is an `event: workspace` with an `id:` ' +
          'and one `data:` line: `{eventId, event, timestamp, owner, workspace: {id, name, status, reason?}}` (`eventId` names the change: the same on a repeated delivery). ' +
          'After what a resumed stream missed comes `event: ready` (data `{}`, with the latest id): the stream is live from there. ' +
          'A client that reconnects sends the last id it saw as `Last-Event-ID` and gets the events after it; when Keel no longer ' +
          'holds that id (it keeps the last 1000 events, and none from before a restart) the stream starts with `event: reset` ' +
          '(data `{"reason":"unknown-event-id"}`): fetch GET /api/workspaces again. Idle streams get `: keep-alive` comments. ' +
          'The stream ends with `event: end` (data `{"reason":"shutdown"}`) or `event: dropped` (data `{"reason":"slow-reader",...}`).',
      },
      example:
        ': connected\n\n' +
        'id: 1767607200000000\nevent: ready\ndata: {}\n\n' +
        'id: 1767607200000001\nevent: workspace\ndata: {"eventId":"evt_01","event":"workspace.created","timestamp":"2026-01-05T10:00:00.000Z","owner":"alice",' +
        '"workspace":{"id":"ws_01","name":"demo","status":"creating"}}\n\n' +
        ': keep-alive\n\n',
      'x-event-schema': WorkspaceStreamEventSchema,
    },
  },
};
