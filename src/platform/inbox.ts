// A queue between callbacks (engine output, a bus subscriber, the log hub) and the async generator
// that yields them as events. Its wait ends when the signal aborts: an async generator's return()
// is queued behind the await it sits in, so without this a stream that has gone idle would never
// reach its `finally` (and never unsubscribe) once its client has left.

export interface Inbox<T> extends AsyncIterable<T> {
  /** Queues an item; `bytes` counts towards `bytes` until the item is taken. Ignored once ended. */
  push(item: T, bytes?: number): void;
  /** No more items: iteration ends once the queued ones are taken. */
  end(): void;
  /** Bytes pushed and not yet taken: lets a producer slow its source down. */
  readonly bytes: number;
}

export function createInbox<T>(signal: AbortSignal): Inbox<T> {
  const items: { item: T; bytes: number }[] = [];
  let head = 0;
  let bytes = 0;
  let ended = false;
  let wake: (() => void) | undefined;

  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  signal.addEventListener('abort', notify, { once: true });

  async function* iterate(): AsyncGenerator<T> {
    try {
      for (;;) {
        // An abort drops what is queued: nobody is left to read it.
        if (signal.aborted) return;
        if (head < items.length) {
          const next = items[head]!;
          items[head++] = undefined as never;
          if (head > 1024 && head * 2 > items.length) {
            items.splice(0, head);
            head = 0;
          }
          bytes -= next.bytes;
          yield next.item;
          continue;
        }
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      signal.removeEventListener('abort', notify);
    }
  }

  return {
    push(item, size = 0) {
      if (ended || signal.aborted) return;
      items.push({ item, bytes: size });
      bytes += size;
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    get bytes() {
      return bytes;
    },
    [Symbol.asyncIterator]: iterate,
  };
}
