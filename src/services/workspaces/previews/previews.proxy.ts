// Keel's preview listener (APP_PREVIEW_PORT, 3105): the one door to a workspace's ports. A request to
// /p/<secret>/<path> is checked against its link (404 unknown, 410 expired or revoked) and forwarded
// to the workspace container's port over the workspace's own network: HTTP with both bodies
// streamed, and WebSocket upgrades relayed frame by frame. Errors are the workspace API's envelope.
import type { Server, ServerWebSocket } from 'bun';
import { AppError, toEnvelope } from '../../../platform/errors';
import type { Logger } from '../../../platform/runtime';
import type { Engine } from '../engine/engine';
import type { Access } from '../access';
import type { PreviewsService } from './previews.service';

const PATH = /^\/p\/([0-9a-f]{40})(\/.*)?$/;
/** Headers that belong to one hop, never forwarded (RFC 9110 7.6.1), plus the host we replace. */
const HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-authenticate', 'host'];

interface Relay {
  target: string;
  protocols: string[];
  workspaceId: string;
  upstream?: WebSocket;
  queued: (string | Uint8Array<ArrayBuffer>)[];
}

const fail = (e: AppError) => new Response(JSON.stringify(toEnvelope(e)), { status: e.status, headers: { 'content-type': 'application/json', ...e.headers } });

export function createPreviewProxy(deps: { previews: PreviewsService; engine: Engine; access: Pick<Access, 'row'>; log: Logger }) {
  const { previews } = deps;
  /** Container id -> its address: one engine inspect per container, not per request. */
  const addresses = new Map<string, string>();
  let server: Server<Relay> | undefined;

  async function target(workspaceId: string): Promise<string | AppError> {
    const ws = await deps.access.row(workspaceId);
    if (!ws || ws.status !== 'running' || !ws.containerId) return new AppError('WORKSPACE_NOT_RUNNING', 'the workspace is not running; start it to preview it');
    let addr = addresses.get(ws.containerId);
    if (!addr) {
      const state = await deps.engine.inspect(ws.containerId).catch(() => null);
      if (!state?.running || !state.address) return new AppError('WORKSPACE_NOT_RUNNING', 'the workspace is not running; start it to preview it');
      addr = state.address;
      addresses.set(ws.containerId, addr);
    }
    return addr;
  }

  async function handle(req: Request, srv: Server<Relay>): Promise<Response | undefined> {
    const url = new URL(req.url);
    const m = PATH.exec(url.pathname);
    if (!m) return fail(new AppError('PREVIEW_NOT_FOUND', 'no such preview'));
    const link = await previews.resolve(m[1]!);
    if (!link.ok) return fail(link.error);
    // The app's relative links resolve under the link's own prefix.
    if (!m[2]) return new Response(null, { status: 308, headers: { location: `${url.pathname}/${url.search}` } });
    const addr = await target(link.workspaceId);
    if (addr instanceof AppError) return fail(addr);
    previews.touch(link.workspaceId);
    const path = `${m[2]}${url.search}`;

    if (req.headers.get('upgrade')?.toLowerCase() === 'websocket') {
      const protocols = (req.headers.get('sec-websocket-protocol') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      const data: Relay = { target: `ws://${addr}:${link.port}${path}`, protocols, workspaceId: link.workspaceId, queued: [] };
      // A client that asked for subprotocols needs one chosen in the answer; the workspace's server is asked for the same list.
      if (srv.upgrade(req, { data, headers: protocols[0] ? { 'sec-websocket-protocol': protocols[0] } : undefined })) return undefined;
      return fail(new AppError('INVALID_REQUEST', 'the WebSocket upgrade was refused'));
    }

    const headers = new Headers(req.headers);
    for (const h of HOP) headers.delete(h);
    headers.set('x-forwarded-host', url.host);
    headers.set('x-forwarded-proto', url.protocol.replace(':', ''));
    headers.set('x-forwarded-prefix', `/p/${m[1]}`);
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    try {
      const res = await fetch(`http://${addr}:${link.port}${path}`, {
        method: req.method,
        headers,
        body: hasBody ? req.body : undefined,
        redirect: 'manual',
        decompress: false,
        // Bun's fetch streams a request body with duplex "half", as the standard asks.
        duplex: 'half',
      } as RequestInit);
      const out = new Headers(res.headers);
      for (const h of HOP) out.delete(h);
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
    } catch {
      addresses.clear();
      return fail(new AppError('PREVIEW_UNREACHABLE', `nothing answers on the workspace's port ${link.port}`));
    }
  }

  return {
    listen(hostname: string, port: number): number {
      server = Bun.serve<Relay>({
        hostname,
        port,
        // Uploads through a preview stream to the workspace: no size limit of Keel's own here.
        maxRequestBodySize: Number.MAX_SAFE_INTEGER,
        fetch: (req, srv) => handle(req, srv),
        websocket: {
          open(ws: ServerWebSocket<Relay>) {
            const r = ws.data;
            const up = new WebSocket(r.target, r.protocols);
            up.binaryType = 'arraybuffer';
            r.upstream = up;
            up.onopen = () => {
              for (const msg of r.queued.splice(0)) up.send(msg);
            };
            up.onmessage = (e) => {
              previews.touch(r.workspaceId);
              ws.send(typeof e.data === 'string' ? e.data : new Uint8Array(e.data as ArrayBuffer));
            };
            up.onclose = (e) => ws.close(e.code === 1005 || e.code === 1006 ? 1000 : e.code, e.reason);
            up.onerror = () => ws.close(1011, 'the workspace closed the connection');
          },
          message(ws: ServerWebSocket<Relay>, msg: string | Buffer) {
            const r = ws.data;
            previews.touch(r.workspaceId);
            const data = typeof msg === 'string' ? msg : new Uint8Array(msg.buffer.slice(msg.byteOffset, msg.byteOffset + msg.byteLength) as ArrayBuffer);
            if (r.upstream?.readyState === WebSocket.OPEN) r.upstream.send(data);
            else r.queued.push(data);
          },
          close(ws: ServerWebSocket<Relay>) {
            ws.data.upstream?.close();
          },
        },
      });
      return server.port!;
    },
    stop() {
      void server?.stop(true);
    },
  };
}
