// Webhook delivery: Keel runs in its own process on the NATS bus; this process publishes
// evt.workspace.* on NATS (as the lifecycle does) and runs the receiver on 127.0.0.1.
//  - throughput: 1,000 events published at once (all pending together), deliveries per second until
//    the last is acknowledged, spread over 100 workspaces and all of one workspace (strictly one at a
//    time, the order guarantee), against the baseline of plain signed POSTs from this process to the
//    same receiver with the same concurrency;
//  - lag: from the event's timestamp (the state change) to its arrival at the receiver, p50/p99, for
//    events published one at a time, and for real stop/start transitions of a `minimal` workspace.
import { createNatsBus } from '../src/platform/bus/nats';
import { createLogger } from '../src/platform/runtime';
import { round, summarize } from './lib';
import { startKeelProcess } from './keel-process';
import { deliveryHeaders } from '../src/services/workspaces/webhooks/signer';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 1000);
const LAG_EVENTS = Number(process.env.BENCH_WEBHOOK_LAG_EVENTS ?? 300);
const REAL_CYCLES = Number(process.env.BENCH_WEBHOOK_REAL_CYCLES ?? 10);
const CONCURRENCY = 16;

interface Arrival {
  event: string;
  workspace: string;
  timestamp: number;
  at: number;
}

function receiver() {
  const arrivals: Arrival[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { event: string; timestamp: string; workspace?: { id: string } };
      arrivals.push({ event: body.event, workspace: body.workspace?.id ?? '', timestamp: Date.parse(body.timestamp), at: Date.now() });
      return new Response(null, { status: 204 });
    },
  });
  return { arrivals, url: `http://127.0.0.1:${server.port}/hook`, stop: () => server.stop(true) };
}

async function until(what: string, fn: () => boolean, timeoutMs = 120_000) {
  const end = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(2);
  }
}

/** Plain signed POSTs from this process, CONCURRENCY at a time: what the receiver and loopback allow. */
async function baseline(url: string, n: number) {
  const body = JSON.stringify({ event: 'workspace.started', timestamp: new Date().toISOString(), workspace: { id: 'ws_base', status: 'running' } });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        const headers = deliveryHeaders({ secret: 'bench-secret-0123456789', deliveryId: `msg_base${i}`, event: 'workspace.started', body, timestampSeconds: Math.floor(Date.now() / 1000) });
        const res = await fetch(url, { method: 'POST', headers, body });
        await res.arrayBuffer();
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

export async function run(): Promise<Record<string, unknown>> {
  const natsUrl = process.env.KEEL_TEST_NATS_URL;
  if (!natsUrl) throw new Error('KEEL_TEST_NATS_URL is not set: run with `bun run bench webhooks`');
  // Keel's own NATS bus, so events travel exactly as the lifecycle's do.
  const bus = await createNatsBus(natsUrl, createLogger({ component: 'bench-bus' }, 'warn'));
  const rx = receiver();
  const keel = await startKeelProcess({ APP_BUS: natsUrl, APP_WEBHOOK_CONCURRENCY: String(CONCURRENCY), APP_WORKSPACE_PORT_RANGE: '24800-24849' });
  const owner = `bench-${Date.now().toString(36)}`;
  const publish = (ws: string) =>
    void bus.publish('evt.workspace.started', { eventId: crypto.randomUUID(), event: 'workspace.started', timestamp: new Date().toISOString(), owner, workspace: { id: ws, name: ws, status: 'running' } });
  try {
    const reg = await keel.api('/api/webhooks', { method: 'POST', as: owner, json: { url: rx.url, events: ['*'], secret: 'bench-secret-0123456789' } });
    if (reg.status !== 201) throw new Error(`register failed: ${reg.status}`);
    // Warm-up: connections, prepared statements, JIT.
    for (let i = 0; i < 100; i++) publish(`ws_warm${i % 10}`);
    await until('warm-up', () => rx.arrivals.length >= 100);

    const burst = async (workspaces: number) => {
      rx.arrivals.length = 0;
      const t0 = performance.now();
      for (let i = 0; i < EVENTS; i++) publish(`ws_b${workspaces}_${i % workspaces}`);
        const published = performance.now() - t0;
      await until(`${EVENTS} deliveries`, () => rx.arrivals.length >= EVENTS);
      const seconds = (performance.now() - t0) / 1000;
      const lag = summarize(rx.arrivals.map((a) => a.at - a.timestamp));
      return { perSecond: round(EVENTS / seconds, 0), publishMs: round(published, 1), lastArrivalP99Ms: round(lag.p99Ms, 1) };
    };
    const spread = await burst(100);
    const serial = await burst(1);
    const baseRate = await baseline(rx.url, EVENTS);

    // Lag, one event at a time (a new workspace state every 10 ms).
    rx.arrivals.length = 0;
    for (let i = 0; i < LAG_EVENTS; i++) {
      publish(`ws_lag${i % 20}`);
        await Bun.sleep(10);
    }
    await until('lag events', () => rx.arrivals.length >= LAG_EVENTS);
    const lag = summarize(rx.arrivals.map((a) => a.at - a.timestamp));

    // Real transitions: the timestamp is the moment the lifecycle committed the new status.
    rx.arrivals.length = 0;
    const realOwner = 'bench';
    const realReg = await keel.api('/api/webhooks', { method: 'POST', as: realOwner, json: { url: rx.url, events: ['workspace.started', 'workspace.stopped'], secret: 'bench-secret-0123456789' } });
    if (realReg.status !== 201) throw new Error(`register failed: ${realReg.status}`);
    const ws = await keel.workspace(`bench-hooks-${Date.now().toString(36)}`);
    await until('first start', () => rx.arrivals.some((a) => a.workspace === ws.id));
    const move = async (action: 'stop' | 'start', event: string) => {
      const seen = rx.arrivals.filter((a) => a.event === event).length;
      for (;;) {
        const res = await keel.api(`/api/workspaces/${ws.id}/${action}`, { method: 'POST' });
        if (res.status === 200) break;
        // 409: the previous move is still settling on the engine.
        if (res.status !== 409) throw new Error(`${action} failed: ${res.status} ${await res.text()}`);
        await Bun.sleep(100);
      }
      await until(event, () => rx.arrivals.filter((a) => a.event === event).length > seen);
    };
    for (let i = 0; i < REAL_CYCLES; i++) {
      await move('stop', 'workspace.stopped');
      await move('start', 'workspace.started');
    }
    const real = summarize(rx.arrivals.filter((a) => a.workspace === ws.id).map((a) => a.at - a.timestamp));

    const result = {
      events: EVENTS,
      concurrency: CONCURRENCY,
      spreadOver100Workspaces: spread,
      oneWorkspaceInOrder: serial,
      baselinePlainPostsPerSecond: round(baseRate, 0),
      spreadToBaselineRatio: round(spread.perSecond / baseRate),
      lagOneAtATime: { n: lag.n, p50Ms: round(lag.p50Ms), p99Ms: round(lag.p99Ms), maxMs: round(lag.maxMs) },
      lagRealTransitions: { n: real.n, p50Ms: round(real.p50Ms), p99Ms: round(real.p99Ms), maxMs: round(real.maxMs) },
    };
    console.table({
      'spread (100 workspaces)': spread,
      'one workspace (ordered)': serial,
    });
    console.log(
      `baseline ${result.baselinePlainPostsPerSecond}/s plain POSTs; spread ratio ${result.spreadToBaselineRatio}; ` +
        `lag p50 ${result.lagOneAtATime.p50Ms} ms p99 ${result.lagOneAtATime.p99Ms} ms; real transitions p50 ${result.lagRealTransitions.p50Ms} ms p99 ${result.lagRealTransitions.p99Ms} ms (n=${real.n})`,
    );
    return result;
  } finally {
    await keel.stop();
    rx.stop();
    await bus.close();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
