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
