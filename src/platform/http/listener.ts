// A service's port, bound in the first milliseconds of start-up (before the service's modules load):
// GET /health answers at once, every other request waits until the service's app takes the port.
// No Elysia here: importing it would cost the very time this saves.
import type { Server } from 'bun';
import pkg from '../../../package.json';
import type { Clock } from '../runtime';

/** What the listener needs of an Elysia app: its handler and its own `listen`. */
export interface ListeningApp {
  fetch: (request: Request) => Response | Promise<Response>;
  listen(options: { hostname: string; port: number; maxRequestBodySize: number }): unknown;
}

export interface Listener {
  server: Server<any>;
  /** Hands every request from now on (and those that waited) to the app. */
  attach(app: ListeningApp): void;
  /** Start-up failed: the requests that waited get a 503 and the port closes. */
  abandon(): Promise<void>;
}

/**
 * Elysia's own WebSocket handler (elysia/ws): each socket carries its route's handlers in `ws.data`.
 * Set here at bind time because the handler of a server cannot be swapped for another later.
 */
const websocket = {
  open: (ws: any) => ws.data.open?.(ws),
  message: (ws: any, message: unknown) => ws.data.message?.(ws, message),
  drain: (ws: any) => ws.data.drain?.(ws),
  close: (ws: any, code: number, reason: string) => ws.data.close?.(ws, code, reason),
  ping: (ws: any) => ws.data.ping?.(ws),
  pong: (ws: any) => ws.data.pong?.(ws),
};

/** The liveness answer of platform/http/health.ts, given before the app exists (same fields, same schema). */
const healthAnswer = (clock: Clock) =>
  Response.json({ status: 'ok', timestamp: clock.now(), uptime: process.uptime(), version: pkg.version });

/**
 * Binds `hostname:port` (0 picks a free one) with the options Elysia's own `listen` would use, so the
 * service keeps the same server, port and limits once its app is attached.
 */
export function openListener(opts: { hostname: string; port: number; maxRequestBodySize: number; clock: Clock }): Listener {
  let handle: ((request: Request) => Response | Promise<Response>) | undefined;
  let ready!: () => void;
  let failed = false;
  const attached = new Promise<void>((resolve) => (ready = resolve));
  const server = Bun.serve({
    hostname: opts.hostname,
    port: opts.port,
    maxRequestBodySize: opts.maxRequestBodySize,
    // As Elysia's listen: 30 s idle timeout, development error pages outside production.
    idleTimeout: 30,
    development: process.env.NODE_ENV !== 'production',
    websocket,
    fetch(request) {
      if (handle) return handle(request);
      if (request.method === 'GET' && new URL(request.url).pathname === '/health') return healthAnswer(opts.clock);
      return attached.then(() => (failed ? new Response(null, { status: 503 }) : handle!(request)));
    },
  });
  return {
    server,
    attach(app) {
      // Elysia's own listen, on this server: it builds Bun's routes (its router in Bun's, as always)
      // and hands them to Bun.serve, which here reloads the bound server instead of binding another.
      const serve = Bun.serve;
      Bun.serve = ((options: Parameters<typeof Bun.serve>[0]) => {
        // Elysia's options name the same port, limits and timeout this server was bound with.
        server.reload(options as unknown as Parameters<typeof server.reload>[0]);
        return server;
      }) as typeof Bun.serve;
      try {
        app.listen({ hostname: opts.hostname, port: server.port!, maxRequestBodySize: opts.maxRequestBodySize });
      } finally {
        Bun.serve = serve;
      }
      handle = (request) => app.fetch(request); // the requests that waited
      ready();
    },
    async abandon() {
      if (handle) return void (await server.stop(true)); // an app's streams may be open: cut, as at any failed start
      failed = true;
      ready();
      await server.stop(false); // lets the waiting requests' 503 out
    },
  };
}
