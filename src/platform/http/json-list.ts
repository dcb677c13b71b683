// A large JSON answer `{"<key>": [...]}` written one item at a time: serialising (and validating) a
// hundred megabytes at once (a workspace's long log lines) would hold the event loop for a second,
// and every other request with it. Small answers stay plain values. Items may also come from an
// async iterable, read one item per socket write, so a producer is paced by the client (a log read
// from the engine as it is sent); one that fails midway ends the body with an error, not with JSON.

const STREAM_FROM_BYTES = 1 << 20;

/**
 * `{[key]: items}` as a value, or as a streamed `application/json` Response when `size` says it is
 * large or when items come from an async iterable (always streamed: its size is not known ahead).
 */
export function jsonList<T>(key: string, items: T[] | AsyncIterable<T>, size: (item: T) => number): Record<string, T[]> | Response {
  if (Array.isArray(items)) {
    let total = 0;
    for (const item of items) if ((total += size(item)) >= STREAM_FROM_BYTES) break;
    if (total < STREAM_FROM_BYTES) return { [key]: items };
  }
  const iterator: Iterator<T> | AsyncIterator<T> = Array.isArray(items) ? items.values() : items[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    // One item per pull: the next is serialised (or read) only when the socket took the last.
    async pull(controller) {
      const r = await iterator.next();
      const head = first ? `{${JSON.stringify(key)}:[` : ',';
      if (r.done) {
        controller.enqueue(encoder.encode(first ? `${head}]}` : ']}'));
        return controller.close();
      }
      first = false;
      controller.enqueue(encoder.encode(head + JSON.stringify(r.value)));
    },
    // The client left: the producer's `finally` runs (an engine stream closes).
    async cancel() {
      await iterator.return?.();
    },
  });
  return new Response(body, { headers: { 'content-type': 'application/json' } });
}
