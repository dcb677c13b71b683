// A bounded work queue: at most `concurrency` jobs run, at most `maxWaiting` more wait their turn in
// order, and a caller past that is told at once (the caller answers 503 with Retry-After) instead of
// growing a queue without end. Used where one actor could otherwise starve all: repo clones, probes.

export interface QueueTicket {
  /** Waits for a running place (in order), runs `fn`, then gives the place back and ends the ticket. */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Gives the ticket's place back without running (idempotent; a no-op once run has ended it). */
  release(): void;
}

export interface BoundedQueue {
  /** A place in the queue, or null when `concurrency + maxWaiting` tickets are out. Synchronous, so check and take are one step. */
  admit(): QueueTicket | null;
  readonly running: number;
  readonly waiting: number;
  /** Tickets out: running, waiting, or admitted and not yet run. */
  readonly admitted: number;
}

export function createBoundedQueue(opts: { concurrency: number; maxWaiting: number }): BoundedQueue {
  let running = 0;
  let admitted = 0;
  const waiting: { wake: () => void }[] = [];

  const next = () => {
    if (running >= opts.concurrency) return;
    const w = waiting.shift();
    if (w) {
      running++;
      w.wake();
    }
  };

  function admit(): QueueTicket | null {
    if (admitted >= opts.concurrency + opts.maxWaiting) return null;
    admitted++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      admitted--;
    };
    return {
      release: end,
      async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
        if (ended) throw new Error('queue ticket already used');
        signal?.throwIfAborted();
        if (running < opts.concurrency && waiting.length === 0) running++;
        else {
          // Wait in order; an abort while waiting leaves the line and the queue.
          await new Promise<void>((resolve, reject) => {
            const entry = {
              wake: () => {
                signal?.removeEventListener('abort', onAbort);
                resolve();
              },
            };
            const onAbort = () => {
              const i = waiting.indexOf(entry);
              if (i >= 0) waiting.splice(i, 1);
              end();
              reject(signal!.reason ?? new Error('aborted'));
            };
            waiting.push(entry);
            signal?.addEventListener('abort', onAbort, { once: true });
          });
        }
        try {
          return await fn();
        } finally {
          running--;
          end();
          next();
        }
      },
    };
  }

  return {
    admit,
    get running() {
      return running;
    },
    get waiting() {
      return waiting.length;
    },
    get admitted() {
      return admitted;
    },
  };
}
