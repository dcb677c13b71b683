// What only the NATS bus has to show: credentials from APP_BUS (refused without, never logged),
// clients that reconnect after a server restart, and JetStream events that survive it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Bus } from '../../../src/platform/bus/bus';
import { createNatsBus, parseBusUrl, redactBusUrl } from '../../../src/platform/bus/nats';
import { createLogger, type Logger } from '../../../src/platform/runtime';
import { startTestNats, type TestNats } from '../../helpers/nats';
import { startKeel, BUN } from '../../helpers/process';

const quiet = createLogger({}, 'error');
let nats: TestNats;
beforeAll(async () => {
  nats = await startTestNats({ pass: 'pa55-w0rd-not-for-logs' });
});
afterAll(() => nats?.close());

const waitFor = async (cond: () => boolean, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await Bun.sleep(20);
  }
};

describe('credentials', () => {
  test('the user and password come from the URL and never appear in its logged form', () => {
    expect(parseBusUrl('nats://u%40x:p%3Aw@h1:4222,h2:4223')).toEqual({ servers: ['nats://h1:4222', 'nats://h2:4223'], user: 'u@x', pass: 'p:w' });
    expect(redactBusUrl('nats://keel:secret@h:4222')).toBe('nats://[redacted]@h:4222');
  });

  test('a client without the password is refused, with an error naming APP_BUS and nothing in it', async () => {
    const err = await createNatsBus(nats.anonymousUrl, quiet).catch((e) => e);
    expect(err.message).toBe('the NATS server refused the user and password of APP_BUS');
    const wrong = await createNatsBus(nats.url.replace(nats.pass, 'guessed-pass'), quiet).catch((e) => e);
    expect(wrong.message).toBe('the NATS server refused the user and password of APP_BUS');
    expect(wrong.message).not.toContain('guessed-pass');
  });

  test('a Keel process on the bus logs neither the password nor the URL that carries it, even across a reconnect', async () => {
    const keel = await startKeel([BUN, 'src/main.ts'], { APP_BUS: nats.url, APP_LOG_LEVEL: 'debug' }, ['sources']);
    try {
      await nats.restart();
      await waitFor(() => keel.stderr().includes('"bus reconnect"'));
    } finally {
      await keel.stop();
    }
    expect(keel.stderr() + keel.stdout()).not.toContain(nats.pass);
  });
});

describe('a server restart', () => {
  let a: Bus;
  let b: Bus;
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  test('clients reconnect, queries work again, and no durable event is lost, even those published while it was down', async () => {
    a = await createNatsBus(nats.url, quiet);
    b = await createNatsBus(nats.url, quiet);
    const run = crypto.randomUUID();
    const got = new Set<number>();
    a.consume(`restart-${run.slice(0, 8)}`, 'evt.catalog.assetAvailability', (e) => {
      if (e.assetId === run) got.add(e.at);
    });
    a.answer('qry.sources.resolve', (req) => ({ assetId: req.assetId, available: false, binding: null }), {});
    await Bun.sleep(300);
    const publish = (at: number) => b.publish('evt.catalog.assetAvailability', { assetId: run, root: 0, path: 'p', available: true, at });

    for (const at of [1, 2, 3]) await publish(at);
    await waitFor(() => got.size === 3);
    await nats.stop();
    // While the server is down: a query fails with a bus error, events wait in the publisher.
    const down = await b.request('qry.sources.resolve', { assetId: 'x' }, { timeoutMs: 300 }).catch((e) => e);
    expect(['BUS_TIMEOUT', 'BUS_UNAVAILABLE']).toContain(down.code);
    for (const at of [4, 5, 6]) await publish(at);
    await nats.restart();
    for (const at of [7, 8, 9]) await publish(at);

    await waitFor(() => got.size === 9);
    expect([...got].sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let answered;
    for (;;) {
      answered = await b.request('qry.sources.resolve', { assetId: 'back' }, { timeoutMs: 1000 }).catch((e) => e);
      if (!(answered instanceof Error)) break;
      await Bun.sleep(100);
    }
    expect(answered).toEqual({ assetId: 'back', available: false, binding: null });
  });

  test('a consumer that was not running gets the events published meanwhile when it comes back', async () => {
    const run = crypto.randomUUID();
    const durable = `late-${run.slice(0, 8)}`;
    const first = await createNatsBus(nats.url, quiet);
    const got: number[] = [];
    const off = first.consume(durable, 'evt.catalog.assetAvailability', (e) => void (e.assetId === run && got.push(e.at)));
    await Bun.sleep(300);
    off();
    await first.close();
    const pub = await createNatsBus(nats.url, quiet);
    for (const at of [1, 2]) await pub.publish('evt.catalog.assetAvailability', { assetId: run, root: 0, path: 'p', available: true, at });
    await pub.close();
    const again = await createNatsBus(nats.url, quiet);
    try {
      again.consume(durable, 'evt.catalog.assetAvailability', (e) => void (e.assetId === run && got.push(e.at)));
      await waitFor(() => got.length === 2);
      expect(got).toEqual([1, 2]);
    } finally {
      await again.close();
    }
  });
});

describe('shutdown', () => {
  test('durable events the server never took hold shutdown for the grace read from the passed clock, then are reported', async () => {
    const own = await startTestNats();
    const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log: Logger = { child: () => log, debug() {}, info() {}, error() {}, warn: (msg, fields) => void warnings.push({ msg, fields }) };
    // A second passes each time the clock is read: the 5 s grace is over after a few reads, whatever the wall clock says.
    let t = 0;
    let reads = 0;
    const clock = { now: () => (reads++, (t += 1000)) };
    const bus = await createNatsBus(own.url, log, { clock });
    try {
      await own.stop();
      await bus.publish('evt.catalog.assetAvailability', { assetId: 'held', root: 0, path: 'p', available: true, at: 1 });
      reads = 0;
      await bus.close();
      expect(reads).toBeGreaterThanOrEqual(5);
      expect(warnings).toContainEqual({ msg: 'durable events not stored at shutdown', fields: { pending: 1 } });
    } finally {
      await own.close();
    }
  });
});
