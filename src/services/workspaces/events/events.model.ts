// The workspace event stream's OpenAPI description: SSE has no schema of its own, so a described string.
/** Bytes a follower may leave unread before it is dropped: the bus does not wait for slow readers. */
export const EVENTS_BACKLOG = {
  maxBytes: 256 * 1024,
  dropEvent: { event: 'dropped', data: { reason: 'slow-reader', message: 'the client left more than 256 KiB unread; reconnect with Last-Event-ID' } },
};

export const EVENTS_SHUTDOWN = { event: 'end', data: { reason: 'shutdown' } };

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
    },
  },
};
