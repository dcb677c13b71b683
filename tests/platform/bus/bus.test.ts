// The bus contract, run against both implementations: what works in-process must work on NATS.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import type { Bus } from '../../../src/platform/bus/bus';
import { subjectMatches } from '../../../src/platform/bus/bus';
import { createMemoryBus } from '../../../src/platform/bus/memory';
import { createNatsBus } from '../../../src/platform/bus/nats';
import { AppError, defineErrors, errorFactories, meaningOf } from '../../../src/platform/errors';
import { createLogger } from '../../../src/platform/runtime';
import { startTestNats, type TestNats } from '../../helpers/nats';

const quiet = createLogger({}, 'error');
// The answerer's table; the asker, whose table does not know the code, learns the status from the answer.
const answererTable = defineErrors({ SOURCE_NOT_FOUND: { status: 404, description: 'no such asset' } });
const answererErrors = errorFactories(answererTable);
// A server of our own: a user and password (as APP_BUS carries them) and JetStream.
let nats: TestNats;
beforeAll(async () => {
  nats = await startTestNats();
});
afterAll(() => nats?.close());
const opened: Bus[] = [];
// Every test gets fresh connections, so no answerer of one test is left for the next.
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
});

const waitFor = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await Bun.sleep(5);
  }
};

const implementations: [string, () => Promise<[Bus, Bus]>][] = [
  ['memory', async () => {
    const b = createMemoryBus(quiet);
    opened.push(b);
    return [b, b];
  }],
  // Two connections: the answerer and the asker are different clients, as across processes.
  ['nats', async () => {
    const a = await createNatsBus(nats.url, quiet);
    const b = await createNatsBus(nats.url, quiet);
    opened.push(a, b);
    return [a, b];
  }],
];

for (const [name, open] of implementations) {
  describe(`${name} bus`, () => {
    test('a query is answered with the reply as JSON', async () => {
      const [server, client] = await open();
      server.answer('qry.identity.session', async (req) => ({ live: req.sid === 's1', reauth: false }), answererTable);
      await Bun.sleep(50);
      expect(await client.request('qry.identity.session', { sid: 's1', sub: 'a' })).toEqual({ live: true, reauth: false });
    });

    test('an AppError thrown by the answerer reaches the asker with its code and status', async () => {
      const [server, client] = await open();
      server.answer('qry.sources.resolve', () => {
        throw answererErrors.SOURCE_NOT_FOUND('no such asset');
      }, answererTable);
      await Bun.sleep(50);
      const err = await client.request('qry.sources.resolve', { assetId: 'x' }).catch((e) => e);
      expect(err).toBeInstanceOf(AppError);
      expect(err.code).toBe('SOURCE_NOT_FOUND');
      expect(meaningOf(err, {}).status).toBe(404);
    });

    test('an unexpected answerer failure does not leak its message', async () => {
      const [server, client] = await open();
      server.answer('qry.media.probe', () => {
        throw new Error('/secret/path exploded');
      }, answererTable);
      await Bun.sleep(50);
      const err = await client.request('qry.media.probe', { root: 0, path: 'a' }).catch((e) => e);
      expect(err.code).toBe('BUS_HANDLER_FAILED');
      expect(err.message).not.toContain('/secret/path');
    });

    test('a query nobody answers fails at once with BUS_NO_ANSWERER', async () => {
      const [, client] = await open();
      const started = Date.now();
      const err = await client.request('qry.identity.session', { sid: 's', sub: 'a' }, { timeoutMs: 3000 }).catch((e) => e);
      expect(err.code).toBe('BUS_NO_ANSWERER');
      expect(Date.now() - started).toBeLessThan(2000);
    });

    test('a slow answerer times out with BUS_TIMEOUT', async () => {
      const [server, client] = await open();
      const off = server.answer('qry.sources.resolve', async () => {
        await Bun.sleep(500);
        return { assetId: 'x', available: false, binding: null };
      }, answererTable);
      await Bun.sleep(50);
      const err = await client.request('qry.sources.resolve', { assetId: 'x' }, { timeoutMs: 100 }).catch((e) => e);
      off();
      expect(err.code).toBe('BUS_TIMEOUT');
    });

    test('events reach every matching subscriber, wildcards included, and a failing one breaks nothing', async () => {
      const [server, client] = await open();
      const got: string[] = [];
      const offs = [
        server.subscribe('evt.workspace.*', (p, subject) => void got.push(`star:${subject}:${(p as { workspace: { id: string } }).workspace.id}`)),
        server.subscribe('evt.>', (_p, subject) => void got.push(`gt:${subject}`)),
        server.subscribe('evt.workspace.created', () => {
          throw new Error('subscriber bug');
        }),
      ];
      await Bun.sleep(50);
      const payload = { eventId: 'evt_bus_test', event: 'workspace.created', timestamp: new Date().toISOString(), owner: 'a', workspace: { id: 'w1', name: 'n', status: 'creating' } };
      await client.publish('evt.workspace.created', payload);
      await waitFor(() => got.length >= 2);
      expect(got.sort()).toEqual(['gt:evt.workspace.created', 'star:evt.workspace.created:w1']);
      for (const off of offs) off();
    });

    test('a durable event reaches one member of a named consumer, each event once', async () => {
      const [server, client] = await open();
      const durable = `test-${crypto.randomUUID().slice(0, 8)}`;
      const run = crypto.randomUUID();
      const got: string[] = [];
      const mine = (e: { assetId: string }) => e.assetId.startsWith(run);
      const offs = [
        server.consume(durable, 'evt.catalog.assetAvailability', (e) => void (mine(e) && got.push(`a:${e.assetId}`))),
        client.consume(durable, 'evt.catalog.assetAvailability', (e) => void (mine(e) && got.push(`b:${e.assetId}`))),
      ];
      await Bun.sleep(300);
      for (let i = 0; i < 6; i++) await client.publish('evt.catalog.assetAvailability', { assetId: `${run}-${i}`, root: 0, path: 'p', available: true, at: i });
      await waitFor(() => got.length >= 6, 5000);
      await Bun.sleep(100);
      expect(got.map((g) => g.slice(2)).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `${run}-${i}`));
      for (const off of offs) off();
    });

    test('a consumer that throws gets the event again', async () => {
      const [server, client] = await open();
      const run = crypto.randomUUID();
      let calls = 0;
      const off = server.consume(`retry-${run.slice(0, 8)}`, 'evt.catalog.assetAvailability', (e) => {
        if (e.assetId !== run) return;
        if (++calls === 1) throw new Error('not yet');
      });
      await Bun.sleep(300);
      await client.publish('evt.catalog.assetAvailability', { assetId: run, root: 0, path: 'p', available: false, at: 1 });
      await waitFor(() => calls >= 2, 5000);
      expect(calls).toBe(2);
      off();
    });

    test('a consumer that throws on an event gets it again before the later events of its key, and other keys go on meanwhile', async () => {
      const [server, client] = await open();
      const run = crypto.randomUUID();
      const [a, b] = [`${run}-a`, `${run}-b`];
      const got: string[] = [];
      let failed = false;
      const off = server.consume(`order-${run.slice(0, 8)}`, 'evt.catalog.assetAvailability', (e) => {
        if (!e.assetId.startsWith(run)) return;
        if (e.assetId === a && e.at === 1 && !failed) {
          failed = true;
          throw new Error('not yet');
        }
        got.push(`${e.assetId.slice(-1)}${e.at}`);
      });
      await Bun.sleep(300);
      for (const assetId of [a, b]) for (const at of [1, 2, 3]) await client.publish('evt.catalog.assetAvailability', { assetId, root: 0, path: 'p', available: true, at });
      await waitFor(() => got.length === 6, 5000);
      expect(got.filter((g) => g.startsWith('a'))).toEqual(['a1', 'a2', 'a3']);
      expect(got.filter((g) => g.startsWith('b'))).toEqual(['b1', 'b2', 'b3']);
      // The other asset went through while a1 waited for its second attempt.
      expect(got.indexOf('b3')).toBeLessThan(got.indexOf('a1'));
      off();
    });

    test('a durable event reaches plain subscribers too', async () => {
      const [server, client] = await open();
      const run = crypto.randomUUID();
      let seen = 0;
      const off = server.subscribe('evt.catalog.assetAvailability', (e) => void (e.assetId === run && seen++));
      await Bun.sleep(50);
      await client.publish('evt.catalog.assetAvailability', { assetId: run, root: 0, path: 'p', available: true, at: 1 });
      await waitFor(() => seen === 1, 5000);
      off();
    });

    test('an unsubscribed handler receives nothing more', async () => {
      const [server, client] = await open();
      let n = 0;
      const off = server.subscribe('evt.catalog.assetIndexed', () => void n++);
      await Bun.sleep(50);
      off();
      await Bun.sleep(20);
      await client.publish('evt.catalog.assetIndexed', { assetId: 'a' } as never);
      await Bun.sleep(100);
      expect(n).toBe(0);
    });
  });
}

test('subject patterns follow NATS rules', () => {
  expect(subjectMatches('evt.workspace.*', 'evt.workspace.created')).toBe(true);
  expect(subjectMatches('evt.workspace.*', 'evt.workspace.created.x')).toBe(false);
  expect(subjectMatches('evt.>', 'evt.workspace.created')).toBe(true);
  expect(subjectMatches('evt.>', 'evt')).toBe(false);
  expect(subjectMatches('qry.media.probe', 'qry.media.probe')).toBe(true);
  expect(subjectMatches('qry.media.*', 'qry.sources.resolve')).toBe(false);
});
