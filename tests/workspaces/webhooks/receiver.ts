// A real webhook receiver on 127.0.0.1 for the tests: records every request (raw body, headers,
// arrival time) and answers what the test tells it to, by default 204.
import { waitFor } from '../../helpers/docker';

export interface Received {
  path: string;
  headers: Record<string, string>;
  raw: string;
  body: any;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Answers each request in turn; the default answer once the list is spent or `answer` returns undefined. */
  answer: ((r: Received) => Answer | undefined) | undefined;
  /** The most requests whose path starts with `prefix` that were open (received, not yet answered) at once. */
  peakOpen(prefix: string): number;
  /** Received requests whose body has this event (and, when given, this workspace). */
  of(event: string, workspaceId?: string): Received[];
  /** Waits until `n` requests match `pred`; returns them. */
  waitFor(what: string, pred: (r: Received) => boolean, n?: number, timeoutMs?: number): Promise<Received[]>;
  stop(): void;
}

export function startReceiver(opts: { port?: number } = {}): Receiver {
  const received: Received[] = [];
  const open = new Map<string, number>();
  const peak = new Map<string, number>();
  const self: Receiver = {
    url: '',
    port: 0,
    received,
    answer: undefined,
    peakOpen: (prefix) => Math.max(0, ...[...peak].filter(([path]) => path.startsWith(prefix)).map(([, n]) => n)),
    of: (event, ws) => received.filter((r) => r.body?.event === event && (ws === undefined || r.body?.workspace?.id === ws)),
    async waitFor(what, pred, n = 1, timeoutMs = 30_000) {
      await waitFor(what, () => received.filter(pred).length >= n, timeoutMs, 20);
      return received.filter(pred);
    },
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: opts.port ?? 0,
    async fetch(req) {
      const raw = await req.text();
      let body: any = null;
      try {
        body = JSON.parse(raw);
      } catch {}
      const r: Received = { path: new URL(req.url).pathname, headers: Object.fromEntries(req.headers), raw, body, at: Date.now() };
      received.push(r);
      const a = self.answer?.(r) ?? { status: 204 };
      open.set(r.path, (open.get(r.path) ?? 0) + 1);
      peak.set(r.path, Math.max(peak.get(r.path) ?? 0, open.get(r.path)!));
      if (a.delayMs) await Bun.sleep(a.delayMs);
      open.set(r.path, open.get(r.path)! - 1);
      return new Response(a.status === 204 ? null : (a.body ?? ''), { status: a.status, headers: a.headers });
    },
  });
  self.port = server.port!;
  self.url = `http://127.0.0.1:${server.port}/hook`;
  return self;
}

/** A port nothing listens on (bound, then released), for a receiver that is down. */
export function closedPort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}
