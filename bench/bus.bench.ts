// The bus: request/reply round trip (one at a time, and 32 in flight) and events per second, on the
// in-process bus (the baseline) and on NATS (a private nats-server with a user, a password and
// JetStream), plain events and durable (JetStream) events.
import type { Bus } from '../src/platform/bus/bus';
import { createMemoryBus } from '../src/platform/bus/memory';
import { createNatsBus } from '../src/platform/bus/nats';
import { createLogger } from '../src/platform/runtime';
import { startTestNats } from '../tests/helpers/nats';
import { load, printTable, round } from './lib';

const quiet = createLogger({}, 'error');

async function roundTrips(server: Bus, client: Bus, n: number) {
  const off = server.answer('qry.sources.resolve', (req) => ({ assetId: req.assetId, available: false, binding: null }), {});
  await Bun.sleep(100);
  const ask = () => client.request('qry.sources.resolve', { assetId: 'ast_bench' });
  const serial = await load(ask, { total: n, concurrency: 1 });
  const parallel = await load(ask, { total: n, concurrency: 32 });
  off();
  return { p50Ms: round(serial.p50Ms, 3), p99Ms: round(serial.p99Ms, 3), serialPerSec: Math.round(serial.rps), parallel32PerSec: Math.round(parallel.rps) };
}

/** Publishes `n` events and times until the subscriber (or durable consumer) has them all. */
async function events(server: Bus, client: Bus, n: number, durable: boolean) {
  const run = crypto.randomUUID();
  let got = 0;
  const handler = (e: { assetId: string }) => void (e.assetId === run && got++);
  const off = durable ? server.consume(`bench-${run.slice(0, 8)}`, 'evt.catalog.assetAvailability', handler) : server.subscribe('evt.catalog.assetAvailability', handler);
  await Bun.sleep(300);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await client.publish('evt.catalog.assetAvailability', { assetId: run, root: 0, path: 'p', available: true, at: i });
  while (got < n) await Bun.sleep(1);
  const seconds = (performance.now() - t0) / 1000;
  off();
  return Math.round(n / seconds);
}

export async function run(): Promise<Record<string, unknown>> {
  const n = Number(process.env.BENCH_BUS_N ?? 5000);
  const nEvents = Number(process.env.BENCH_BUS_EVENTS ?? 50_000);
  const nDurable = Number(process.env.BENCH_BUS_DURABLE ?? 5000);
  const results: Record<string, any> = { requests: n, events: nEvents, durableEvents: nDurable };

  const mem = createMemoryBus(quiet);
  results.memory = { ...(await roundTrips(mem, mem, n)), eventsPerSec: await events(mem, mem, nEvents, false), durableEventsPerSec: await events(mem, mem, nDurable, true) };
  await mem.close();

  const nats = await startTestNats();
  const a = await createNatsBus(nats.url, quiet);
  const b = await createNatsBus(nats.url, quiet);
  try {
    results.nats = { ...(await roundTrips(a, b, n)), eventsPerSec: await events(a, b, nEvents, false), durableEventsPerSec: await events(a, b, nDurable, true) };
  } finally {
    await a.close();
    await b.close();
    await nats.close();
  }
  results.ratios = {
    natsRoundTripVsMemory: round(results.nats.p50Ms / results.memory.p50Ms, 1),
    natsEventsVsMemory: round(results.nats.eventsPerSec / results.memory.eventsPerSec, 3),
    durableVsPlainOnNats: round(results.nats.durableEventsPerSec / results.nats.eventsPerSec, 3),
  };
  printTable('Bus: request/reply and events', [
    { bus: 'memory', ...results.memory },
    { bus: 'nats', ...results.nats },
  ]);
  console.log(results.ratios);
  return results;
}

if (import.meta.main) {
  console.log(JSON.stringify(await run(), null, 2));
  process.exit(0);
}
