// Webhook delivery: Keel runs in its own process on the NATS bus; this process publishes
// evt.workspace.* on NATS (as the lifecycle does) and runs the receiver on 127.0.0.1.
//  - throughput: 1,000 events published at once (all pending together), deliveries per second until
//    the last is acknowledged, spread over 100 workspaces and all of one workspace (strictly one at a
//    time, the order guarantee), against the baseline of plain signed POSTs from this process to the
//    same receiver with the same concurrency;
//  - lag: from the event's timestamp (the state change) to its arrival at the receiver, p50/p99, for
//    events published one at a time, and for real stop/start transitions of a `minimal` workspace;
//  - fairness: the lag of 8 calm registrations (other owners, a steady stream of events) with nobody
//    else busy (the baseline), while one registration is flooded with events its receiver takes at
//    once, and while it is flooded with events its receiver answers after a second; with the flooded
//    registration's own deliveries per second.
import { createNatsBus } from '../src/platform/bus/nats';
import { createLogger } from '../src/platform/runtime';
import { round, summarize } from './lib';
import { startKeelProcess } from './keel-process';
import { deliveryHeaders } from '../src/services/workspaces/webhooks/signer';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 1000);
const LAG_EVENTS = Number(process.env.BENCH_WEBHOOK_LAG_EVENTS ?? 300);
const REAL_CYCLES = Number(process.env.BENCH_WEBHOOK_REAL_CYCLES ?? 10);
const CONCURRENCY = 16;
const FLOOD_EVENTS = Number(process.env.BENCH_WEBHOOK_FLOOD_EVENTS ?? 3000);
const CALM_REGISTRATIONS = 8;
const CALM_EVENTS = Number(process.env.BENCH_WEBHOOK_CALM_EVENTS ?? 200);

interface Arrival {
  event: string;
  workspace: string;
  timestamp: number;
  at: number;
}

function receiver() {
  const arrivals: (Arrival & { path: string })[] = [];
  /** Milliseconds the receiver waits before answering, per path. */
  const delays = new Map<string, number>();
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const body = (await req.json()) as { event: string; timestamp: string; workspace?: { id: string } };
      const path = new URL(req.url).pathname;
      arrivals.push({ path, event: body.event, workspace: body.workspace?.id ?? '', timestamp: Date.parse(body.timestamp), at: Date.now() });
      const delay = delays.get(path);
      if (delay) await Bun.sleep(delay);
      return new Response(null, { status: 204 });
    },
  });
  return { arrivals, delays, url: `http://127.0.0.1:${server.port}/hook`, stop: () => server.stop(true) };
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

    const fair = await fairness(keel, bus, rx);

    const result = {
      fairness: fair,
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
    console.table(fair.calmLag);
    console.log(`flooded registration: ${fair.floodFastPerSecond}/s with a receiver that answers at once`);
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

type Rx = ReturnType<typeof receiver>;

/**
 * Calm registrations' lag (event timestamp to arrival) with and without a flooded neighbour, and the
 * flooded registration's throughput. Each phase has owners of its own, so no delivery of one phase
 * lands in another's figures.
 */
async function fairness(keel: Awaited<ReturnType<typeof startKeelProcess>>, bus: Awaited<ReturnType<typeof createNatsBus>>, rx: Rx) {
  const tag = Date.now().toString(36);
  const publishFor = (owner: string, ws: string) =>
    void bus.publish('evt.workspace.started', { eventId: crypto.randomUUID(), event: 'workspace.started', timestamp: new Date().toISOString(), owner, workspace: { id: ws, name: ws, status: 'running' } });
  const register = async (owner: string, path: string) => {
    const res = await keel.api('/api/webhooks', { method: 'POST', as: owner, json: { url: `${rx.url}/${path}`, events: ['*'], secret: 'bench-secret-0123456789' } });
    if (res.status !== 201) throw new Error(`register failed: ${res.status}`);
    return ((await res.json()) as { id: string }).id;
  };
  /** A steady stream to the calm registrations of `phase` (one event every 10 ms, in turn); their lag. */
  const calmStream = async (phase: string) => {
    const owners = Array.from({ length: CALM_REGISTRATIONS }, (_, i) => `calm-${phase}-${i}-${tag}`);
    for (const o of owners) await register(o, o);
    const mine = (a: { path: string }) => a.path.startsWith(`/hook/calm-${phase}-`);
    for (let i = 0; i < CALM_EVENTS; i++) {
      publishFor(owners[i % owners.length]!, `ws_${phase}_${i % 40}`);
      await Bun.sleep(10);
    }
    await until(`${phase} calm events`, () => rx.arrivals.filter(mine).length >= CALM_EVENTS, 300_000);
    const lag = summarize(rx.arrivals.filter(mine).map((a) => a.at - a.timestamp));
    return { n: lag.n, p50Ms: round(lag.p50Ms), p99Ms: round(lag.p99Ms), maxMs: round(lag.maxMs) };
  };

  const baseline = await calmStream('base');

  // A flood its receiver takes at once: every event over many workspaces, so nothing waits on order.
  const fastOwner = `flood-fast-${tag}`;
  await register(fastOwner, fastOwner);
  const fastArrived = () => rx.arrivals.filter((a) => a.path === `/hook/${fastOwner}`).length;
  const t0 = performance.now();
  for (let i = 0; i < FLOOD_EVENTS; i++) publishFor(fastOwner, `ws_flood_${i % 500}`);
  const duringFast = await calmStream('fast');
  await until('the fast flood', () => fastArrived() >= FLOOD_EVENTS, 300_000);
  const floodFastPerSecond = round(FLOOD_EVENTS / ((performance.now() - t0) / 1000), 0);

  // A flood its receiver answers after a second: the registration's slots stay held.
  const slowOwner = `flood-slow-${tag}`;
  rx.delays.set(`/hook/${slowOwner}`, 1000);
  const slowId = await register(slowOwner, slowOwner);
  for (let i = 0; i < 300; i++) publishFor(slowOwner, `ws_slow_${i}`);
  const duringSlow = await calmStream('slow');
  // 300 s of answers are not waited for: deleting the registration drops what it still has pending.
  await keel.api(`/api/webhooks/${slowId}`, { method: 'DELETE', as: slowOwner });

  return {
    calmRegistrations: CALM_REGISTRATIONS,
    floodEvents: FLOOD_EVENTS,
    floodFastPerSecond,
    calmLag: { 'no flood (baseline)': baseline, 'one registration flooded, fast receiver': duringFast, 'one registration flooded, receiver answers after 1 s': duringSlow },
  };
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
