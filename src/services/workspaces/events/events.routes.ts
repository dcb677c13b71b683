// HTTP wiring of the workspace event stream (GET /api/events).
import { Elysia } from 'elysia';
import { lastEventId, type Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { EVENTS_BACKLOG, EVENTS_SHUTDOWN, EventsStream } from './events.model';
import type { WorkspaceEvents } from './events.service';
import { workspaceOperation as op } from '../workspaces.errors';

export function eventsRoutes(deps: { auth: WorkspaceAuthPlugin; events: WorkspaceEvents; sse: Sse }) {
  return new Elysia({ name: 'workspaces.events' }).use(deps.auth).get(
    '/api/events',
    ({ actor, request }) => {
      const stream = deps.sse.open(request);
      const events = deps.events.follow(actor, lastEventId(request), stream.signal);
      return stream.respond(events, { shutdownEvent: EVENTS_SHUTDOWN, backlog: EVENTS_BACKLOG });
    },
    {
detail: { ...op('streamEvents', ['QUOTA_EXCEEDED']),
        tags: ['events'],
        summary: 'Your workspace events as a live SSE stream (admins: all), resumable with Last-Event-ID',
        description:
          'One stream for a whole dashboard: every create, start, stop, restart, delete and failure of the workspaces you may see, ' +
          'instead of polling each workspace. Send `Authorization: Bearer <token>` (read it with fetch; EventSource cannot send headers). ' +
          'An open stream takes one of the actor\'s `APP_QUOTA_STREAMS` stream slots until it ends; past the quota: 429 `QUOTA_EXCEEDED` with `details: {quota, limit}`.',
        responses: { 200: EventsStream },
      },
    },
  );
}
