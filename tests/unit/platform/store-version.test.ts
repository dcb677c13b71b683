// The PostgreSQL change counter is read for many requests at once (coalescedVersion, platform/store/changes.ts): a
// request never gets a value read before it arrived, and a burst costs two reads, not one each.
import { expect, test } from 'bun:test';
import { coalescedVersion } from '../../../src/platform/store';

/** A counter whose reads take `ms`; `value` is what a read started now will answer. */
function slowCounter(ms: number) {
  const state = { value: 0, reads: 0 };
  const read = async () => {
    state.reads++;
    const seen = state.value;
    await Bun.sleep(ms);
    return String(seen);
  };
  return { state, version: coalescedVersion(read) };
}

test('a burst of requests during a read shares the next read: two reads for a hundred requests', async () => {
  const { state, version } = slowCounter(20);
  const first = version();
  const burst = Array.from({ length: 100 }, () => version());
  expect(new Set(await Promise.all([first, ...burst]))).toEqual(new Set(['0']));
  expect(state.reads).toBe(2);
});

test('a request that arrives after a write never gets a read started before the write', async () => {
  const { state, version } = slowCounter(20);
  const before = version(); // in flight, started at value 0
  await Bun.sleep(5);
  state.value = 1; // a write commits while that read is in flight
  const after = version(); // arrived after the write
  expect(await before).toBe('0');
  expect(await after).toBe('1');
});

test('a failed read fails only the requests it answered; the next ones read again', async () => {
  let fail = true;
  const version = coalescedVersion(async () => {
    const failing = fail;
    await Bun.sleep(5);
    if (failing) throw new Error('the server went away');
    return '7';
  });
  const failed = version();
  const waiting = version();
  fail = false;
  await expect(failed).rejects.toThrow('the server went away');
  expect(await waiting).toBe('7');
});
