// HTTP wiring of terminals: open one (Bearer), a new ticket for one (Bearer), and the WebSocket that
// attaches to it, authorised by its single-use ticket instead of a header (browsers send none there).
import { Elysia } from 'elysia';
import type { ServerWebSocket } from 'bun';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { IdParams } from '../lifecycle/lifecycle.model';
import { workspaceOperation as op } from '../workspaces.errors';
import { TerminalAttachQuery, TerminalBody, TerminalParams, TerminalTicket } from './terminals.model';
import type { TerminalSink, TerminalsService } from './terminals.service';

const ATTACH_PATH = /^\/api\/workspaces\/[^/]+\/terminals\/[^/]+$/;

/** GET .../terminals/{tid} carries its ticket instead of a Bearer header: the auth hook lets it through to the ticket check. */
export const ticketAuthorised = (request: Request) => request.method === 'GET' && ATTACH_PATH.test(new URL(request.url).pathname);

/** A text frame that resizes: {"type":"resize","cols":N,"rows":N} (Elysia has parsed the JSON already). */
function resizeOf(message: unknown): { cols: number; rows: number } | null {
  if (!message || typeof message !== 'object' || ArrayBuffer.isView(message)) return null;
  const m = message as { type?: unknown; cols?: unknown; rows?: unknown };
  const ok = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 1000;
  return m.type === 'resize' && ok(m.cols) && ok(m.rows) ? { cols: m.cols, rows: m.rows } : null;
}

export function terminalsRoutes(deps: { auth: WorkspaceAuthPlugin; terminals: TerminalsService }) {
  const { terminals } = deps;
  return new Elysia({ name: 'workspaces.terminals' })
    .use(deps.auth)
    .post(
      '/api/workspaces/:id/terminals',
      async ({ params, body, actor, set }) => {
        const opened = await terminals.open(actor, params.id, body);
        set.status = 201;
        return opened;
      },
      {
        params: IdParams,
        body: TerminalBody,
        response: { 201: TerminalTicket },
        detail: {
          tags: ['terminals'],
          ...op('openWorkspaceTerminal', ['WORKSPACE_NOT_FOUND', 'WORKSPACE_NOT_RUNNING', 'QUOTA_EXCEEDED', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          summary: 'Open a terminal (a PTY) in the workspace; answers a ticket to attach to it',
          description:
            'Starts `command` (default: a login shell) on a TTY of `cols` x `rows` as the template\'s user. Attach with a WebSocket to ' +
            '`GET /api/workspaces/{id}/terminals/{tid}?ticket=T` within 60 s; the ticket works once. A terminal holds one of the actor\'s ' +
            '`APP_QUOTA_STREAMS` slots while it lives (admins exempt), and ends 10 minutes after its last socket closed, or when its process exits.',
        },
      },
    )
    .post('/api/workspaces/:id/terminals/:tid/tickets', ({ params, actor, set }) => {
      set.status = 201;
      return terminals.ticket(actor, params.id, params.tid);
    }, {
      params: TerminalParams,
      response: { 201: TerminalTicket },
      detail: {
        tags: ['terminals'],
        ...op('ticketWorkspaceTerminal', ['WORKSPACE_NOT_FOUND', 'TERMINAL_NOT_FOUND']),
        summary: 'A new single-use ticket to (re)attach to a terminal',
        description: 'The next socket first receives what the terminal wrote since the last one closed (the last 64 KiB).',
      },
    });
}

/** The WebSocket: registered before the app's Bearer auth resolves an actor, since its ticket is its authorisation. */
export function terminalAttachRoute(deps: { terminals: TerminalsService }) {
  const { terminals } = deps;
  // Per socket: the terminal it is attached to and the sink the service writes to.
  const sockets = new WeakMap<object, { tid: string; sink: TerminalSink }>();
  const redeemed = new WeakSet<Request>();
  return new Elysia({ name: 'workspaces.terminals.attach' })
    .ws('/api/workspaces/:id/terminals/:tid', {
      params: TerminalParams,
      query: TerminalAttachQuery,
      detail: {
        tags: ['terminals'],
        // No Bearer security (the ticket is the authorisation), so the platform adds no 401 of its own: the ticket's refusal is named here.
        ...op('attachWorkspaceTerminal', ['UNAUTHORIZED', 'TERMINAL_NOT_FOUND']),
        summary: 'Attach to a terminal: a WebSocket upgrade authorised by `?ticket=` (no Authorization header)',
        description:
          'Binary frames carry the terminal\'s bytes both ways; a text frame `{"type":"resize","cols":N,"rows":N}` resizes it. ' +
          'The socket first receives what is kept (the last 64 KiB), then the live output. An unknown, used or expired ticket answers 401 ' +
          'UNAUTHORIZED before the upgrade; an ended terminal 404 TERMINAL_NOT_FOUND. The socket closes (1000) when the terminal ends.',
      },
      beforeHandle({ params, query, request }) {
        // Elysia runs a ws route's beforeHandle twice (as a route hook and again before the upgrade): the ticket is spent once.
        if (redeemed.has(request)) return;
        terminals.redeem(params.id, params.tid, query.ticket);
        redeemed.add(request);
      },
      open(ws) {
        const raw = ws.raw as ServerWebSocket<unknown>;
        const sink: TerminalSink = {
          send: (bytes) => void raw.send(bytes),
          end: (reason) => raw.close(1000, reason.slice(0, 120)),
        };
        sockets.set(raw, { tid: ws.data.params.tid, sink });
        terminals.attach(ws.data.params.tid, sink);
      },
      message(ws, message) {
        const s = sockets.get(ws.raw);
        if (!s) return;
        if (message instanceof Uint8Array) return void terminals.input(s.tid, message);
        if (message instanceof ArrayBuffer) return void terminals.input(s.tid, new Uint8Array(message));
        const size = resizeOf(message);
        if (size) void terminals.resize(s.tid, size.cols, size.rows);
      },
      close(ws) {
        const s = sockets.get(ws.raw);
        if (s) terminals.detach(s.tid, s.sink);
      },
    });
}
