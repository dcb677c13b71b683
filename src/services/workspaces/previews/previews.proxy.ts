// Keel's preview listener (APP_PREVIEW_PORT, 3105): the one door to a workspace's ports. Each preview
// is an origin of its own, `<label>.<APP_PREVIEW_DOMAIN>`: a request is routed by its Host header's
// first label, checked against its link (404 unknown, 410 expired or revoked, 503 workspace not
// running) and forwarded to the workspace container's port over the workspace's own network: HTTP
// with both bodies streamed, and WebSocket upgrades relayed frame by frame (closed when the link is
// revoked or expires). The answer passes unchanged but for what would reach past its own origin: a
// cookie's Domain attribute and Service-Worker-Allowed. Errors are the workspace API's envelope.
import type { Server, ServerWebSocket } from 'bun';
import { AppError } from '../../../platform/errors';
import { render } from '../../../platform/http/errors';
import type { Clock, Logger } from '../../../platform/runtime';
import type { PreviewRelays } from './previews.relays';
import { LABEL, type PreviewLink, type PreviewsService } from './previews.service';
import type { PreviewTargets } from './previews.targets';
import { WorkspaceErrors, workspaceErrorTable } from '../workspaces.errors';

/** Headers that belong to one hop, never forwarded (RFC 9110 7.6.1), plus the host we replace. */
const HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-authenticate', 'host'];
/** A cookie's Domain attribute: without it the cookie stays on the preview's own host. */
const COOKIE_DOMAIN = /;\s*domain\s*=[^;]*/gi;

interface Relay {
  target: string;
  protocols: string[];
  link: PreviewLink;
  upstream?: WebSocket;
  queued: (string | Uint8Array<ArrayBuffer>)[];
  leave?: () => void;
}

const fail = (e: AppError) => render(e, 'envelope', undefined, workspaceErrorTable);
const notFound = () => fail(WorkspaceErrors.PREVIEW_NOT_FOUND('no such preview'));

/** The label of a preview's Host (`<label>.<domain>[:port]`), or undefined. */
function labelOf(host: string | null): string | undefined {
  const dot = host?.indexOf('.') ?? -1;
  if (dot < 0) return undefined;
  const label = host!.slice(0, dot).toLowerCase();
  return LABEL.test(label) ? label : undefined;
}

/**
 * The workspace's answer as the browser gets it: hop headers, cookie domains and Service-Worker-Allowed
 * removed. Bun's fetch answers with mutable headers: they are edited in place and the answer passed on
 * as it is (a copy of the headers and a new Response cost a quarter of the proxy's time per page).
 */
function answer(res: Response): Response {
  const out = res.headers;
  for (const h of HOP) out.delete(h);
  // A page may not widen its service worker's scope past what its own path allows.
  out.delete('service-worker-allowed');
  const cookies = out.getSetCookie();
  if (cookies.length) {
    out.delete('set-cookie');
    for (const c of cookies) out.append('set-cookie', c.replace(COOKIE_DOMAIN, ''));
  }
  return res;
}

export function createPreviewProxy(deps: { previews: PreviewsService; targets: PreviewTargets; relays: PreviewRelays; clock: Clock; log: Logger; proto: 'http' | 'https' }) {
  const { previews, targets, relays } = deps;
  let server: Server<Relay> | undefined;

  async function handle(req: Request, srv: Server<Relay>): Promise<Response | undefined> {
    const host = req.headers.get('host');
    const label = labelOf(host);
    if (!label) return notFound();
    const found = await previews.resolve(label);
    if (!found.ok) return fail(found.error);
    const { link } = found;
    const addr = await targets.get(link.workspaceId);
    if (addr instanceof AppError) return fail(addr);
    previews.touch(link.workspaceId);
    // The path and query as sent: req.url is absolute (`http://host/path?q`).
    const path = req.url.slice(req.url.indexOf('/', req.url.indexOf('//') + 2));

    if (req.headers.get('upgrade')?.toLowerCase() === 'websocket') {
      const protocols = (req.headers.get('sec-websocket-protocol') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      const data: Relay = { target: `ws://${addr}:${link.port}${path}`, protocols, link, queued: [] };
      // A client that asked for subprotocols needs one chosen in the answer; the workspace's server is asked for the same list.
      if (srv.upgrade(req, { data, headers: protocols[0] ? { 'sec-websocket-protocol': protocols[0] } : undefined })) return undefined;
      return fail(WorkspaceErrors.INVALID_REQUEST('the WebSocket upgrade was refused'));
    }

    // The request's own headers, edited in place (Bun's are mutable): no copy per page.
    const headers = req.headers;
    for (const h of HOP) headers.delete(h);
    headers.set('x-forwarded-host', host!);
    headers.set('x-forwarded-proto', deps.proto);
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
      return answer(res);
    } catch {
      // The container may have gone or moved: its address is looked up again on the next request.
      targets.forget(link.workspaceId);
      return fail(WorkspaceErrors.PREVIEW_UNREACHABLE(`nothing answers on the workspace's port ${link.port}`));
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
            // Revoked or expired between the upgrade and now: nothing is relayed.
            if (r.link.revoked || r.link.expiresAtMs <= deps.clock.now()) return ws.close(1008, 'the preview link has ended');
            r.leave = relays.add(r.link, (why) => {
              r.upstream?.close();
              ws.close(1008, why === 'revoked' ? 'the preview link was revoked' : 'the preview link has expired');
            });
            const up = new WebSocket(r.target, r.protocols);
            up.binaryType = 'arraybuffer';
            r.upstream = up;
            up.onopen = () => {
              for (const msg of r.queued.splice(0)) up.send(msg);
            };
            up.onmessage = (e) => {
              previews.touch(r.link.workspaceId);
              ws.send(typeof e.data === 'string' ? e.data : new Uint8Array(e.data as ArrayBuffer));
            };
            up.onclose = (e) => ws.close(e.code === 1005 || e.code === 1006 ? 1000 : e.code, e.reason);
            up.onerror = () => ws.close(1011, 'the workspace closed the connection');
          },
          message(ws: ServerWebSocket<Relay>, msg: string | Buffer) {
            const r = ws.data;
            previews.touch(r.link.workspaceId);
            const data = typeof msg === 'string' ? msg : new Uint8Array(msg.buffer.slice(msg.byteOffset, msg.byteOffset + msg.byteLength) as ArrayBuffer);
            if (r.upstream?.readyState === WebSocket.OPEN) r.upstream.send(data);
            else r.queued.push(data);
          },
          close(ws: ServerWebSocket<Relay>) {
            ws.data.leave?.();
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
