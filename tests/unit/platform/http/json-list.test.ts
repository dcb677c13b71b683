// The large JSON list answer: small lists stay plain values; large ones stream to the same JSON.
import { expect, test } from 'bun:test';
import { jsonList } from '../../../../src/platform/http/json-list';

const entries = (n: number, bytes: number) => Array.from({ length: n }, (_, i) => ({ i, message: `é"${'x'.repeat(bytes)}` }));

test('a list under 1 MiB is answered as a plain value', () => {
  const items = entries(10, 1000);
  expect(jsonList('logs', items, (e) => e.message.length)).toEqual({ logs: items });
});

test('a list of 1 MiB or more streams, item by item, to exactly the JSON of the value', async () => {
  const items = entries(40, 64 * 1024);
  const res = jsonList('logs', items, (e) => e.message.length);
  expect(res).toBeInstanceOf(Response);
  const r = res as Response;
  expect(r.headers.get('content-type')).toBe('application/json');
  const reader = r.body!.getReader();
  let chunks = 0;
  let text = '';
  const decoder = new TextDecoder();
  for (let c = await reader.read(); !c.done; c = await reader.read()) {
    chunks++;
    text += decoder.decode(c.value, { stream: true });
  }
  expect(chunks).toBe(items.length + 1);
  expect(text).toBe(JSON.stringify({ logs: items }));
});

test('items from an async iterable are read one per socket write, and a client that leaves ends the producer', async () => {
  const items = entries(3, 10);
  let read = 0;
  let finished = false;
  async function* produce() {
    try {
      for (const item of items) {
        read++;
        yield item;
      }
    } finally {
      finished = true;
    }
  }
  // Read whole: the same JSON as the value, even for an empty source.
  const whole = jsonList('logs', produce(), (e) => e.message.length) as Response;
  expect(whole).toBeInstanceOf(Response);
  expect(await whole.text()).toBe(JSON.stringify({ logs: items }));
  expect(await (jsonList('logs', (async function* () {})(), () => 0) as Response).text()).toBe('{"logs":[]}');

  // Left after the first item: nothing more is read, and the producer's finally has run.
  read = 0;
  finished = false;
  const left = jsonList('logs', produce(), (e) => e.message.length) as Response;
  const reader = left.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe(`{"logs":[${JSON.stringify(items[0])}`);
  await reader.cancel();
  expect(read).toBeLessThanOrEqual(2);
  expect(finished).toBe(true);
});
