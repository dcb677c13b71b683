// Server-Sent Events as a plain Response: one writer for every stream of the platform.
// Heartbeat comments keep idle streams open through proxies; the stream closes on client abort,
// on platform shutdown, or when the producer calls close(), and `cleanup` always runs once.

export interface SseSink {
  /** Sends one event; returns false when the client is gone or the stream is closed. */
  send(data: unknown, event?: string, id?: string): boolean;
  /** Sends a frame made once by encodeEvent: one serialisation shared by many clients (fan-out). */
  sendEncoded(frame: Uint8Array): boolean;
  comment(text: string): boolean;
  close(): void;
  readonly closed: boolean;
  /** Bytes queued but not yet read by the client: lets a producer drop a slow reader. */
  readonly backlog: number;
}

export interface SseOptions {
  /** Aborted when the client disconnects (request.signal). */
  signal: AbortSignal;
  /** Aborted when the platform shuts down. */
  shutdown?: AbortSignal;
  /** The last event a client gets when the platform shuts down, so it can tell that from a crash. */
  shutdownEvent?: { event: string; data: unknown };
  heartbeatMs?: number;
  headers?: Record<string, string>;
  /** Called once the stream is open; the returned function runs once when it ends. */
  start(sink: SseSink): (() => void) | void | Promise<(() => void) | void>;
}

const enc = new TextEncoder();

function eventText(data: unknown, event?: string, id?: string): string {
  let frame = '';
  if (id) frame += `id: ${id}\n`;
  if (event) frame += `event: ${event}\n`;
  return frame + `data: ${JSON.stringify(data)}\n\n`;
}

/** One SSE event as bytes, for sendEncoded. */
export const encodeEvent = (data: unknown, event?: string, id?: string): Uint8Array => enc.encode(eventText(data, event, id));

export function sseResponse(opts: SseOptions): Response {
  let cleanup: (() => void) | void;
  let closed = false;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let backlog = 0;

  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    opts.signal.removeEventListener('abort', finish);
    opts.shutdown?.removeEventListener('abort', onShutdown);
    try {
      controller.close();
    } catch {}
    try {
      cleanup?.();
    } catch {}
  };

  const write = (text: string) => writeBytes(enc.encode(text));
  const writeBytes = (bytes: Uint8Array) => {
    if (closed) return false;
    try {
      controller.enqueue(bytes);
      backlog = Math.max(0, -(controller.desiredSize ?? 0));
      return true;
    } catch {
      finish();
      return false;
    }
  };

  const onShutdown = () => {
    if (opts.shutdownEvent) sink.send(opts.shutdownEvent.data, opts.shutdownEvent.event);
    finish();
  };

  const sink: SseSink = {
    send: (data, event, id) => write(eventText(data, event, id)),
    sendEncoded: writeBytes,
    comment: (text) => write(`: ${text}\n\n`),
    close: finish,
    get closed() {
      return closed;
    },
    get backlog() {
      return backlog;
    },
  };

  const stream = new ReadableStream<Uint8Array>(
    {
      async start(c) {
        controller = c;
        if (opts.signal.aborted || opts.shutdown?.aborted) return finish();
        opts.signal.addEventListener('abort', finish, { once: true });
        opts.shutdown?.addEventListener('abort', onShutdown, { once: true });
        heartbeat = setInterval(() => sink.comment('keep-alive'), opts.heartbeatMs ?? 15_000);
        write(': connected\n\n');
        try {
          const c2 = await opts.start(sink);
          if (closed) c2?.();
          else cleanup = c2;
        } catch {
          finish();
        }
      },
      pull() {
        backlog = Math.max(0, -(controller.desiredSize ?? 0));
      },
      cancel: finish,
    },
    // Count bytes so `backlog` means bytes the client has not read.
    { highWaterMark: 64 * 1024, size: (chunk) => chunk?.byteLength ?? 0 },
  );

  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...opts.headers,
    },
  });
}
