// Polling until something holds, for any test (the unit tier included: no engine, no platform here).

type Truthy<T> = Exclude<T, null | undefined | false | 0 | ''>;

/** Polls `fn` until it returns a truthy value, and returns that; fails naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 20_000, everyMs = 100): Promise<Truthy<T>> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last as Truthy<T>;
    await Bun.sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}
