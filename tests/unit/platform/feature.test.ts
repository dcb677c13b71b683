// The one shape of a feature (platform/feature.ts): a service's list is mounted, subscribed, started
// and stopped in the order the list says, on a real Elysia app and the memory bus.
import { expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { createMemoryBus } from '../../../src/platform/bus/memory';
import { featuresLifetime, mountFeatures, type Feature } from '../../../src/platform/feature';
import { createLogger } from '../../../src/platform/runtime';

const bus = () => createMemoryBus(createLogger({ app: 'test' }, 'error'));

/** A feature that writes what happens to it into `seen`. */
function recorded(name: string, seen: string[], opts: { slowStart?: boolean } = {}): Feature {
  return {
    service: name,
    routes: new Elysia({ name: `test.${name}` }).get(`/${name}`, () => name),
    listen() {
      seen.push(`${name}:listen`);
      return () => seen.push(`${name}:unlisten`);
    },
    async start() {
      if (opts.slowStart) await Bun.sleep(5);
      seen.push(`${name}:start`);
    },
    stop() {
      seen.push(`${name}:stop`);
    },
  };
}

test('every route of the list is mounted and answers', async () => {
  const app = mountFeatures(new Elysia(), [recorded('a', []), { service: null }, recorded('b', [])]);
  expect(await (await app.handle(new Request('http://localhost/a'))).text()).toBe('a');
  expect(await (await app.handle(new Request('http://localhost/b'))).text()).toBe('b');
});

test('start subscribes every feature before the first start awaits, then starts them in list order', async () => {
  const seen: string[] = [];
  const life = featuresLifetime([recorded('a', seen, { slowStart: true }), recorded('b', seen)], bus());
  const started = life.start();
  // Nothing awaited yet: both already listen.
  expect(seen).toEqual(['a:listen', 'b:listen']);
  await started;
  expect(seen).toEqual(['a:listen', 'b:listen', 'a:start', 'b:start']);
});

test('stop ends the subscriptions first, then stops the features in reverse', async () => {
  const seen: string[] = [];
  const life = featuresLifetime([recorded('a', seen), recorded('b', seen)], bus());
  await life.start();
  seen.length = 0;
  await life.stop();
  expect(seen).toEqual(['a:unlisten', 'b:unlisten', 'b:stop', 'a:stop']);
});
