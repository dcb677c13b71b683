// Server-Sent Events: the one adapter from events to bytes. Services yield events (an AsyncIterable);
// this owns their encoding, a heartbeat while the stream is idle, the backlog a slow reader may leave,
// and the end of the stream: client gone, platform shutdown or a dropped reader abort the stream's
// signal and call the iterator's return(), so the generator's `finally` runs (and unsubscribes).
//
// A plain Response, not Elysia's generator SSE: Elysia's stream has no heartbeat, no shutdown, no byte
// backlog to drop a slow reader by, and no way to send one pre-encoded frame to many clients.

/** One event: `id:` (for Last-Event-ID resumption), `event:` (the name; none = message), `data:` (JSON). */
export interface SseEvent {
  id?: string | number;
  event?: string;
  data: unknown;
}

/** An event, or a frame encoded once by encodeEvent and sent as is to many clients (hub fan-out). */
export type SseItem = SseEvent | Uint8Array;

/**
 * The server closes a connection idle this long (Elysia's listen sets Bun's idleTimeout to 30 s):
 * a heartbeat must come well before it, or idle streams die between pings.
 */
export const SERVER_IDLE_TIMEOUT_MS = 30_000;
export const HEARTBEAT_MIN_MS = 100;
export const HEARTBEAT_MAX_MS = 20_000;

export interface SseOptions {
  /** Aborted when the platform shuts down: every open stream ends, with its shutdown event. */
  shutdown: AbortSignal;
  /** A `: keep-alive` comment after this long without a frame. */
  heartbeatMs: number;
  /** Where a producer that throws is reported (services end their own streams with an error event). */
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
}

export interface RespondOptions {
  /** The last event a client gets when the platform shuts down, so it can tell that from a crash. */
  shutdownEvent?: SseEvent;
  /**
   * With a backlog, the stream reads its events as they come and drops a client that leaves more than
   * `maxBytes` unread, after `dropEvent` (a shared source must not wait for its slowest reader).
   * Without one, events are read only as the client reads: a slow client slows its producer down.
   */
  backlog?: { maxBytes: number; dropEvent: SseEvent };
  headers?: Record<string, string>;
}

export interface SseStream {
  /** Aborted when the stream ends for any reason: hand it to the service whose events it carries. */
  readonly signal: AbortSignal;
  respond(events: AsyncIterable<SseItem>, opts?: RespondOptions): Response;
}

const enc = new TextEncoder();
const HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};
/** Bytes the stream holds before the client counts as behind (the platform's own buffer). */
const HIGH_WATER = 64 * 1024;
const LINE_BREAK = /[\r\n\0]/;
const KEEP_ALIVE = enc.encode(': keep-alive\n\n');

function field(name: string, value: string): string {
  // A line break would end the field early and let the value forge fields of its own.
  if (LINE_BREAK.test(value)) throw new TypeError(`SSE ${name} must not contain a line break`);
  return `${name}: ${value}\n`;
}

function eventText(ev: SseEvent): string {
  let frame = '';
  if (ev.id !== undefined) frame += field('id', String(ev.id));
  if (ev.event) frame += field('event', ev.event);
  // JSON.stringify escapes line breaks inside strings: the data is always one line.
  return frame + `data: ${JSON.stringify(ev.data)}\n\n`;
}

/** One event as bytes: encode once, send to many (the same frame for every follower of a hub). */
export const encodeEvent = (ev: SseEvent): Uint8Array => enc.encode(eventText(ev));

/** The id a reconnecting client resumes after (`Last-Event-ID`, which EventSource sends by itself). */
export function lastEventId(request: Request): string | undefined {
  const id = request.headers.get('last-event-id')?.trim();
  return id ? id : undefined;
}

/** The platform's SSE adapter, made once per service with its shutdown signal and heartbeat. */
export function createSse(opts: SseOptions) {
  const { heartbeatMs } = opts;
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < HEARTBEAT_MIN_MS || heartbeatMs > HEARTBEAT_MAX_MS) {
    throw new RangeError(`heartbeatMs must be a whole number from ${HEARTBEAT_MIN_MS} to ${HEARTBEAT_MAX_MS} (the server drops connections idle ${SERVER_IDLE_TIMEOUT_MS} ms)`);
  }

  function respond(request: Request, stop: AbortController, events: AsyncIterable<SseItem>, o: RespondOptions = {}): Response {
    const iterator = events[Symbol.asyncIterator]();
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let closed = false;
    let wakeDemand: (() => void) | undefined;
    // The heartbeat is one timer per stream, not one per event (1,000 followers of a busy log would
    // pay for 1,000 timers a line): a frame only notes its time; the timer pings if nothing went out
    // for heartbeatMs, else waits out the rest of the period. A monotonic clock: this is a duration.
    let lastFrame = performance.now();
    let heartbeat: ReturnType<typeof setTimeout> | undefined;

    const finish = () => {
      if (closed) return;
      closed = true;
      request.signal.removeEventListener('abort', finish);
      opts.shutdown.removeEventListener('abort', onShutdown);
      clearTimeout(heartbeat);
      stop.abort();
      wakeDemand?.();
      try {
        controller.close();
      } catch {}
      // Runs the generator's finally now if it waits at a yield, else once the aborted signal has
      // ended the wait it sits in (services wait through createInbox).
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    };

    /** Bytes queued and not yet taken by the client's connection. */
    const unread = () => HIGH_WATER - (controller.desiredSize ?? 0);

    const write = (bytes: Uint8Array) => {
      if (closed) return;
      lastFrame = performance.now();
      try {
        controller.enqueue(bytes);
      } catch {
        return finish();
      }
      if (o.backlog && unread() > o.backlog.maxBytes) {
        controller.enqueue(encodeEvent(o.backlog.dropEvent));
        finish();
      }
    };

    const onShutdown = () => {
      if (o.shutdownEvent && !closed) {
        try {
          controller.enqueue(encodeEvent(o.shutdownEvent));
        } catch {}
      }
      finish();
    };

    /** Resolves once the client has room (without a backlog, events are read only as it reads). */
    const demand = () => (closed || (controller.desiredSize ?? 0) > 0 ? undefined : new Promise<void>((r) => (wakeDemand = r)));

    const beat = () => {
      if (closed) return;
      const quiet = performance.now() - lastFrame;
      if (quiet >= heartbeatMs) write(KEEP_ALIVE);
      heartbeat = setTimeout(beat, quiet >= heartbeatMs ? heartbeatMs : heartbeatMs - quiet);
    };

    async function pump() {
      try {
        for (;;) {
          if (!o.backlog) await demand();
          if (closed) return;
          const r = await iterator.next();
          if (closed || r.done) break;
          write(r.value instanceof Uint8Array ? r.value : encodeEvent(r.value));
        }
      } catch (e) {
        opts.log?.warn('event stream producer failed', { err: (e as Error)?.message });
      }
      finish();
    }

    const stream = new ReadableStream<Uint8Array>(
      {
        start(c) {
          controller = c;
          if (opts.shutdown.aborted) return onShutdown();
          if (request.signal.aborted) return finish();
          request.signal.addEventListener('abort', finish, { once: true });
          opts.shutdown.addEventListener('abort', onShutdown, { once: true });
          write(enc.encode(': connected\n\n'));
          heartbeat = setTimeout(beat, heartbeatMs);
          void pump();
        },
        pull() {
          const w = wakeDemand;
          wakeDemand = undefined;
          w?.();
        },
        cancel: finish,
      },
      // Count bytes, so the backlog is bytes the client has not read.
      { highWaterMark: HIGH_WATER, size: (chunk) => chunk?.byteLength ?? 0 },
    );
    return new Response(stream, { headers: { ...HEADERS, ...o.headers } });
  }

  return {
    /**
     * Opens a stream for this request. Check access before: an error thrown before respond() is an
     * ordinary error response, and nothing of the stream is attached until respond().
     */
    open(request: Request): SseStream {
      const stop = new AbortController();
      return { signal: stop.signal, respond: (events, o) => respond(request, stop, events, o) };
    },
  };
}

export type Sse = ReturnType<typeof createSse>;
