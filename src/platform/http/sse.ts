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

/**
 * An event; a frame encoded once by encodeEvent and sent as is to many clients (hub fan-out); or a
 * splice: a live source that writes its frames to the client itself, with no await per frame.
 */
export type SseItem = SseEvent | Uint8Array | SseSplice;

/** What a splice writes to: the client's stream. */
export interface SseWriter {
  /** Queues a frame for the client; once the stream has ended, nothing. */
  write(frame: Uint8Array): void;
  /** Bytes written that the client's connection has not taken yet. */
  readonly unread: number;
  /** Aborted when the stream ends for any reason. */
  readonly signal: AbortSignal;
}

/**
 * A live source spliced into a stream (a hub's follower): yielded among the events, the adapter hands
 * it the stream's writer and reads the next event once `attach`'s promise resolves (the source ended,
 * or the stream did). The source then writes each frame as it comes, so a line reaches a thousand
 * followers in one synchronous loop instead of a thousand chains of awaits. It paces itself by
 * `unread`; `taken` is called when the client has read what the connection pushed back on.
 */
export interface SseSplice {
  attach(out: SseWriter): Promise<void>;
  taken?(): void;
}

const isSplice = (item: SseItem): item is SseSplice => typeof (item as SseSplice).attach === 'function';

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

/** Bun's direct stream controller: writes go to the connection's sink, no queue in between. */
interface DirectController {
  write(data: Uint8Array): number | Promise<number>;
  flush(): number | Promise<number>;
}

/** What the streams of one adapter share: its options and one heartbeat timer for all of them. */
interface Shared {
  opts: SseOptions;
  open: Set<Connection>;
  ticker?: ReturnType<typeof setInterval>;
}

/**
 * One open stream, on Bun's direct stream: each frame is written to the connection's sink at once
 * (no queue, no read request and no promise per frame between the writer and the socket). A write
 * the sink cannot pass on returns a promise that settles once the client has read it: from then until
 * the latest such promise settles, what is written counts as unread, and an events source is read
 * again only after it settled. A class, so a thousand followers share its methods instead of holding
 * a dozen closures each; it is its own underlying source (pull, cancel), its own abort listener
 * (handleEvent) and the writer a splice gets.
 */
class Connection implements SseWriter {
  type = 'direct' as const;
  sink: DirectController | undefined = undefined;
  /** Frames written before the sink came (a shutdown event), sent first. */
  early: Uint8Array[] | undefined = undefined;
  closed = false;
  /** Ends the response (the pull's promise). */
  release: (() => void) | undefined = undefined;
  /** A frame went out since the heartbeat last looked, and since when (as it saw) none did: no clock read per frame. */
  sent = false;
  quietSince = performance.now();
  /** Bytes written since the sink last pushed back, until the latest write it pushed back on is read. */
  behind = 0;
  latest: Promise<number> | undefined = undefined;
  wakeDemand: (() => void) | undefined = undefined;
  splice: SseSplice | undefined = undefined;
  readonly iterator: AsyncIterator<SseItem>;

  constructor(
    readonly shared: Shared,
    readonly request: Request,
    readonly stop: AbortController,
    events: AsyncIterable<SseItem>,
    readonly o: RespondOptions,
  ) {
    this.iterator = events[Symbol.asyncIterator]();
    // Listening from now, not from the first pull: a client gone before the body starts still ends it.
    const { shutdown } = shared.opts;
    if (shutdown.aborted) this.onShutdown();
    else if (request.signal.aborted) this.finish();
    else {
      request.signal.addEventListener('abort', this, { once: true });
      shutdown.addEventListener('abort', this, { once: true });
    }
  }

  get signal() {
    return this.stop.signal;
  }

  /** Bytes written that the client's connection has not taken (beyond what the socket holds). */
  get unread() {
    return this.behind;
  }

  /** Called once, when the response body starts: the stream lasts until the promise resolves. */
  pull(c: DirectController): Promise<void> {
    this.sink = c;
    const early = this.early;
    this.early = undefined;
    if (early) for (const f of early) this.send(f);
    if (this.closed) return Promise.resolve();
    const open = new Promise<void>((resolve) => (this.release = resolve));
    this.write(CONNECTED);
    this.shared.open.add(this);
    this.shared.ticker ??= setInterval(beatAll, Math.max(HEARTBEAT_MIN_MS / 2, Math.floor(this.shared.opts.heartbeatMs / 8)), this.shared);
    void this.pump();
    return open;
  }

  cancel() {
    this.finish();
  }

  /** The request's signal (client gone) or the platform's shutdown. */
  handleEvent(e: Event) {
    if (e.target === this.shared.opts.shutdown) this.onShutdown();
    else this.finish();
  }

  /** Hands a frame to the sink now; false when the connection is gone. */
  send(bytes: Uint8Array): boolean {
    const sink = this.sink;
    if (!sink) {
      (this.early ??= []).push(bytes);
      return true;
    }
    let r: number | Promise<number>;
    try {
      r = sink.write(bytes);
      sink.flush();
    } catch {
      return false;
    }
    if (r instanceof Promise) {
      this.behind += bytes.byteLength;
      this.latest = r;
      r.then(
        () => this.drained(r),
        () => this.finish(),
      );
    }
    return true;
  }

  /** The client has read up to this write: if it was the latest pushed back, nothing is unread. */
  drained(r: Promise<number>) {
    if (this.latest !== r) return;
    this.latest = undefined;
    this.behind = 0;
    const w = this.wakeDemand;
    this.wakeDemand = undefined;
    w?.();
    this.splice?.taken?.();
  }

  write(bytes: Uint8Array) {
    if (this.closed) return;
    this.sent = true;
    if (!this.send(bytes)) return this.finish();
    const backlog = this.o.backlog;
    if (backlog && this.unread > backlog.maxBytes) {
      this.send(encodeEvent(backlog.dropEvent));
      this.finish();
    }
  }

  onShutdown() {
    if (this.o.shutdownEvent && !this.closed) this.send(encodeEvent(this.o.shutdownEvent));
    this.finish();
  }

  finish() {
    if (this.closed) return;
    this.closed = true;
    const { shared } = this;
    this.request.signal.removeEventListener('abort', this);
    shared.opts.shutdown.removeEventListener('abort', this);
    shared.open.delete(this);
    if (shared.open.size === 0 && shared.ticker) {
      clearInterval(shared.ticker);
      shared.ticker = undefined;
    }
    this.stop.abort();
    this.wakeDemand?.();
    this.release?.();
    // Runs the generator's finally now if it waits at a yield, else once the aborted signal has
    // ended the wait it sits in (services wait through createInbox).
    void Promise.resolve(this.iterator.return?.()).catch(() => undefined);
  }

  /** Resolves once the client has read what the sink pushed back on (without a backlog, events are read only as it reads). */
  demand() {
    return this.closed || this.latest === undefined ? undefined : new Promise<void>((r) => (this.wakeDemand = r));
  }

  async pump() {
    try {
      for (;;) {
        if (!this.o.backlog) await this.demand();
        if (this.closed) return;
        const r = await this.iterator.next();
        if (this.closed || r.done) break;
        const item = r.value;
        if (item instanceof Uint8Array) this.write(item);
        else if (isSplice(item)) {
          this.splice = item;
          await item.attach(this);
          this.splice = undefined;
        } else this.write(encodeEvent(item));
      }
    } catch (e) {
      this.shared.opts.log?.warn('event stream producer failed', { err: (e as Error)?.message });
    }
    this.finish();
  }
}

/**
 * The heartbeat, one timer for every open stream of an adapter (a timer per stream is a thousand
 * timers for a thousand followers): a stream with no frame for heartbeatMs gets a `: keep-alive`.
 * It ticks eight times a period and notes, per stream, the first tick that found no frame sent since
 * the one before; a quiet stream is pinged between heartbeatMs and 1.25 x heartbeatMs after its last
 * frame, well before the server's idle timeout.
 */
function beatAll(shared: Shared) {
  const now = performance.now();
  for (const c of shared.open) {
    if (c.sent) c.quietSince = now;
    else if (now - c.quietSince >= shared.opts.heartbeatMs) {
      c.write(KEEP_ALIVE);
      c.quietSince = now;
    }
    c.sent = false;
  }
}

const CONNECTED = enc.encode(': connected\n\n');

/** The platform's SSE adapter, made once per service with its shutdown signal and heartbeat. */
export function createSse(opts: SseOptions) {
  const { heartbeatMs } = opts;
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < HEARTBEAT_MIN_MS || heartbeatMs > HEARTBEAT_MAX_MS) {
    throw new RangeError(`heartbeatMs must be a whole number from ${HEARTBEAT_MIN_MS} to ${HEARTBEAT_MAX_MS} (the server drops connections idle ${SERVER_IDLE_TIMEOUT_MS} ms)`);
  }
  const shared: Shared = { opts, open: new Set() };

  return {
    /**
     * Opens a stream for this request. Check access before: an error thrown before respond() is an
     * ordinary error response, and nothing of the stream is attached until respond().
     */
    open(request: Request): SseStream {
      const stop = new AbortController();
      return {
        signal: stop.signal,
        respond: (events, o = {}) => {
          const stream = new ReadableStream(new Connection(shared, request, stop, events, o) as unknown as UnderlyingDefaultSource<Uint8Array>);
          return new Response(stream, { headers: o.headers ? { ...HEADERS, ...o.headers } : HEADERS });
        },
      };
    },
  };
}

export type Sse = ReturnType<typeof createSse>;
