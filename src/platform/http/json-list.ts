// A large JSON answer `{"<key>": [...]}` written one item at a time: serialising (and validating) a
// hundred megabytes at once (a workspace's long log lines) would hold the event loop for a second,
// and every other request with it. Small answers stay plain values.

const STREAM_FROM_BYTES = 1 << 20;

/** `{[key]: items}` as a value, or as a streamed `application/json` Response when `size` says it is large. */
export function jsonList<T>(key: string, items: T[], size: (item: T) => number): Record<string, T[]> | Response {
  let total = 0;
  for (const item of items) if ((total += size(item)) >= STREAM_FROM_BYTES) break;
  if (total < STREAM_FROM_BYTES) return { [key]: items };
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    // One item per pull: the next is serialised only when the socket took the last.
    pull(controller) {
      if (i === items.length) {
        controller.enqueue(encoder.encode(']}')); // items is not empty here: it holds at least 1 MiB
        return controller.close();
      }
      const head = i === 0 ? `{${JSON.stringify(key)}:[` : ',';
      controller.enqueue(encoder.encode(head + JSON.stringify(items[i++])));
    },
  });
  return new Response(body, { headers: { 'content-type': 'application/json' } });
}
