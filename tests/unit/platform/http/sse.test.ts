// The platform's SSE adapter through real HTTP (a Bun server on a free port): encoding and ids,
// resumption from Last-Event-ID, a heartbeat only while idle, the end of a stream (client gone,
// shutdown, slow reader) running the producer's `finally`, and backpressure without a backlog.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createSse, encodeEvent, HEARTBEAT_MAX_MS, lastEventId, type SseItem, type SseWriter } from '../../../../src/platform/http/sse';
import { createInbox } from '../../../../src/platform/inbox';
import { loadStreamsConfig } from '../../../../src/services/workspaces/streams.config';
import { waitFor } from '../../../helpers/wait';
import { sseReader } from '../../../helpers/sse';

const HEARTBEAT_MS = 150;

/** What each test's producer reports: started, items yielded, and whether its finally ran. */
interface Probe {
  started: boolean;
  yielded: number;
  finallyRan: boolean;
}

let shutdown = new AbortController();
let routes: Record<string, (req: Request, probe: Probe) => Response> = {};
const probes = new Map<string, Probe>();
let server: ReturnType<typeof Bun.serve>;

function sse() {
  return createSse({ shutdown: shutdown.signal, heartbeatMs: HEARTBEAT_MS });
}

/** A producer that yields `items` at once, then waits (through an inbox) until its stream ends. */
async function* burstThenIdle(items: SseItem[], signal: AbortSignal, probe: Probe): AsyncGenerator<SseItem> {
  probe.started = true;
  try {
    for (const i of items) {
      yield i;
      probe.yielded++;
    }
    yield* createInbox<SseItem>(signal);
  } finally {
    probe.finallyRan = true;
  }
}

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      const probe: Probe = { started: false, yielded: 0, finallyRan: false };
      probes.set(url.searchParams.get('probe') ?? url.pathname, probe);
      const route = routes[url.pathname];
      return route ? route(req, probe) : new Response('no route', { status: 404 });
    },
  });
});

afterAll(() => server.stop(true));

const url = (path: string) => `http://localhost:${server.port}${path}`;

describe('encoding', () => {
  test('events carry id, event and one JSON data line; a pre-encoded frame is sent as it is', async () => {
    routes['/enc'] = (req, probe) => {
      const s = sse().open(req);
      const shared = encodeEvent({ data: { shared: true } });
      return s.respond(
        (async function* () {
          yield* burstThenIdle([{ id: 1, event: 'greet', data: { text: 'line one\nline two' } }, shared, { data: 'plain' }], s.signal, probe);
        })(),
        {},
      );
    };
    const abort = new AbortController();
    const res = await fetch(url('/enc'), { signal: abort.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    const r = sseReader(res);
    expect(await r.next()).toEqual({ comment: 'connected' });
    expect(await r.next()).toEqual({ id: '1', event: 'greet', data: '{"text":"line one\\nline two"}' });
    expect(await r.next()).toEqual({ data: '{"shared":true}' });
    expect(await r.next()).toEqual({ data: '"plain"' });
    abort.abort();
  });

  test('an id or event name with a line break is refused, so a value cannot forge fields', () => {
    expect(() => encodeEvent({ id: '1\ndata: forged', data: 1 })).toThrow(TypeError);
    expect(() => encodeEvent({ event: 'x\revent: y', data: 1 })).toThrow(TypeError);
  });
});

describe('resumption', () => {
  test('a route replays the events after Last-Event-ID, each with its id', async () => {
    const log = ['a', 'b', 'c', 'd'].map((data, i) => ({ id: i + 1, data }));
    routes['/resume'] = (req, probe) => {
      const s = sse().open(req);
      const after = Number(lastEventId(req) ?? 0);
      return s.respond(burstThenIdle(log.filter((e) => e.id > after), s.signal, probe));
    };
    const abort = new AbortController();
    const res = await fetch(url('/resume'), { headers: { 'last-event-id': ' 2 ' }, signal: abort.signal });
    const r = sseReader(res);
    expect(await r.nextEvent()).toEqual({ id: '3', data: '"c"' });
    expect(await r.nextEvent()).toEqual({ id: '4', data: '"d"' });
    abort.abort();
    expect(lastEventId(new Request('http://x/'))).toBeUndefined();
  });
});

describe('heartbeat', () => {
  test('events ready back to back get no keep-alive between them; an idle stream then gets one', async () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ data: i }));
    routes['/busy'] = (req, probe) => {
      const s = sse().open(req);
      return s.respond(burstThenIdle(items, s.signal, probe));
    };
    const abort = new AbortController();
    const r = sseReader(await fetch(url('/busy'), { signal: abort.signal }));
    expect((await r.next())!.comment).toBe('connected');
    for (let i = 0; i < items.length; i++) expect(await r.next()).toEqual({ data: String(i) });
    // Nothing more to send: the next frame is the heartbeat, and the one after it another.
    expect(await r.next()).toEqual({ comment: 'keep-alive' });
    expect(await r.next()).toEqual({ comment: 'keep-alive' });
    abort.abort();
  });

  test('a stream with events more often than the heartbeat gets no keep-alive in three heartbeat periods', async () => {
    // A fixed-interval ping would show up here twice or more; the gaps stay far below the heartbeat.
    const heartbeatMs = 1000;
    routes['/steady'] = (req) => {
      const s = createSse({ shutdown: shutdown.signal, heartbeatMs }).open(req);
      return s.respond(
        (async function* () {
          for (let i = 0; i < 40; i++) {
            yield { data: i };
            await Bun.sleep(heartbeatMs / 20);
          }
        })(),
      );
    };
    const r = sseReader(await fetch(url('/steady')));
    expect((await r.next())!.comment).toBe('connected');
    const frames: unknown[] = [];
    for (let f = await r.next(); f; f = await r.next()) frames.push(f);
    expect(frames).toEqual(Array.from({ length: 40 }, (_, i) => ({ data: String(i) })));
  });

  test('a heartbeat the server would outlast, or no whole number, is refused at setup', () => {
    for (const heartbeatMs of [HEARTBEAT_MAX_MS + 1, 60_000, 0, 99, 1.5, Number.NaN]) {
      expect(() => createSse({ shutdown: shutdown.signal, heartbeatMs })).toThrow(RangeError);
    }
    expect(() => loadStreamsConfig({ APP_WORKSPACE_SSE_HEARTBEAT_MS: '60000' })).toThrow('APP_WORKSPACE_SSE_HEARTBEAT_MS');
    expect(loadStreamsConfig({ APP_WORKSPACE_SSE_HEARTBEAT_MS: String(HEARTBEAT_MAX_MS) }).heartbeatMs).toBe(HEARTBEAT_MAX_MS);
  });
});

describe('end of a stream', () => {
  test('a client that goes away aborts the signal and runs the idle producer\'s finally', async () => {
    let signal: AbortSignal | undefined;
    routes['/abort'] = (req, probe) => {
      const s = sse().open(req);
      signal = s.signal;
      return s.respond(burstThenIdle([{ data: 'hello' }], s.signal, probe));
    };
    const abort = new AbortController();
    const r = sseReader(await fetch(url('/abort'), { signal: abort.signal }));
    expect(await r.nextEvent()).toEqual({ data: '"hello"' });
    const probe = probes.get('/abort')!;
    expect(probe.finallyRan).toBe(false);
    abort.abort();
    await waitFor('producer finally', async () => probe.finallyRan, 5000);
    expect(signal!.aborted).toBe(true);
  });

  test('shutdown sends the shutdown event last, closes the stream and runs finally', async () => {
    routes['/shutdown'] = (req, probe) => {
      const s = sse().open(req);
      return s.respond(burstThenIdle([{ data: 'before' }], s.signal, probe), { shutdownEvent: { event: 'end', data: { reason: 'shutdown' } } });
    };
    const r = sseReader(await fetch(url('/shutdown')));
    expect(await r.nextEvent()).toEqual({ data: '"before"' });
    shutdown.abort();
    expect(await r.collect(() => false)).toEqual([{ event: 'end', data: '{"reason":"shutdown"}' }]);
    expect(await r.next()).toBeNull();
    await waitFor('producer finally', async () => probes.get('/shutdown')!.finallyRan, 5000);
    shutdown = new AbortController();
  });

  test('a stream opened during shutdown gets only the shutdown event and never starts its producer', async () => {
    shutdown.abort();
    routes['/late'] = (req, probe) => {
      const s = sse().open(req);
      return s.respond(burstThenIdle([{ data: 'never' }], s.signal, probe), { shutdownEvent: { event: 'end', data: { reason: 'shutdown' } } });
    };
    const r = sseReader(await fetch(url('/late')));
    expect(await r.collect(() => false)).toEqual([{ event: 'end', data: '{"reason":"shutdown"}' }]);
    expect(probes.get('/late')!.started).toBe(false);
    shutdown = new AbortController();
  });

  test('a producer that finishes ends the stream after its last event', async () => {
    routes['/finite'] = (req) => {
      const s = sse().open(req);
      return s.respond(
        (async function* () {
          yield { data: 1 };
          yield { event: 'exit', data: { code: 0 } };
        })(),
      );
    };
    const r = sseReader(await fetch(url('/finite')));
    expect(await r.collect(() => false)).toEqual([{ data: '1' }, { event: 'exit', data: '{"code":0}' }]);
    expect(await r.next()).toBeNull();
  });
  test('a producer that throws ends the stream after what it sent, and the failure is logged', async () => {
    const warnings: string[] = [];
    routes['/throws'] = (req) => {
      const s = createSse({ shutdown: shutdown.signal, heartbeatMs: HEARTBEAT_MS, log: { warn: (msg) => warnings.push(msg) } }).open(req);
      return s.respond(
        (async function* () {
          yield { data: 'first' };
          throw new Error('producer bug');
        })(),
      );
    };
    const r = sseReader(await fetch(url('/throws')));
    expect(await r.collect(() => false)).toEqual([{ data: '"first"' }]);
    expect(await r.next()).toBeNull();
    expect(warnings).toEqual(['event stream producer failed']);
  });
});

describe('backlog', () => {
  const big = { data: 'x'.repeat(64 * 1024) };

  test('without a backlog, a client that does not read holds the producer back', async () => {
    routes['/paced'] = (req, probe) => {
      const s = sse().open(req);
      return s.respond(burstThenIdle(Array.from({ length: 10_000 }, () => big), s.signal, probe));
    };
    const res = await fetch(url('/paced'));
    const r = sseReader(res);
    expect((await r.nextEvent())!.data!.length).toBe(big.data.length + 2);
    // Not reading: the producer stops once the stream's buffer and the socket are full.
    const probe = probes.get('/paced')!;
    let before = -1;
    await waitFor('producer held back', async () => {
      const now = probe.yielded;
      const still = now === before;
      before = now;
      await Bun.sleep(200);
      return still;
    }, 10_000);
    expect(probe.yielded).toBeGreaterThan(0);
    expect(probe.yielded).toBeLessThan(10_000);
    await r.cancel();
    await waitFor('producer finally', async () => probe.finallyRan, 5000);
  });

  test('with a backlog, a client that leaves too much unread gets the drop event last and the producer ends', async () => {
    routes['/drop'] = (req, probe) => {
      const s = sse().open(req);
      return s.respond(burstThenIdle(Array.from({ length: 10_000 }, () => big), s.signal, probe), {
        backlog: { maxBytes: 256 * 1024, dropEvent: { event: 'dropped', data: { reason: 'slow-reader' } } },
      });
    };
    const res = await fetch(url('/drop'));
    const probe = probes.get('/drop')!;
    // The client reads nothing until the producer has been stopped.
    await waitFor('producer finally', async () => probe.finallyRan, 10_000);
    expect(probe.yielded).toBeLessThan(10_000);
    const frames = await sseReader(res).collect(() => false, 30_000);
    expect(frames.at(-1)).toEqual({ event: 'dropped', data: '{"reason":"slow-reader"}' });
    expect(frames.slice(0, -1).every((f) => f.data === JSON.stringify(big.data))).toBe(true);
  });
});

describe('splice', () => {
  /** A live source the test drives: it keeps the writer it is given until `stop` resolves it. */
  function source() {
    const state = { out: undefined as SseWriter | undefined, taken: 0, stop: () => {} };
    const splice = {
      attach(out: SseWriter) {
        state.out = out;
        return new Promise<void>((resolve) => {
          state.stop = resolve;
          out.signal.addEventListener('abort', () => resolve(), { once: true });
        });
      },
      taken() {
        state.taken++;
      },
    };
    return { state, splice };
  }

  test('a spliced source writes frames straight to the client; once it is done the events go on', async () => {
    const { state, splice } = source();
    routes['/splice'] = (req) => {
      const s = sse().open(req);
      return s.respond(
        (async function* () {
          yield { data: 'before' };
          yield splice;
          yield { event: 'end', data: { reason: 'done' } };
        })(),
      );
    };
    const r = sseReader(await fetch(url('/splice')));
    expect(await r.nextEvent()).toEqual({ data: '"before"' });
    await waitFor('splice attached', async () => state.out !== undefined, 5000);
    // Written synchronously, one after the other: the frames arrive in order, nothing in between.
    for (let i = 0; i < 3; i++) state.out!.write(encodeEvent({ data: i }));
    for (let i = 0; i < 3; i++) expect(await r.nextEvent()).toEqual({ data: String(i) });
    state.stop();
    expect(await r.collect(() => false)).toEqual([{ event: 'end', data: '{"reason":"done"}' }]);
    expect(await r.next()).toBeNull();
  });

  test('unread counts what the client has not taken, taken says when it caught up; the client gone aborts the writer and runs finally', async () => {
    const { state, splice } = source();
    routes['/splice-slow'] = (req, probe) => {
      const s = sse().open(req);
      return s.respond(
        (async function* () {
          try {
            yield splice;
          } finally {
            probe.finallyRan = true;
          }
        })(),
      );
    };
    const abort = new AbortController();
    const res = await fetch(url('/splice-slow'), { signal: abort.signal });
    await waitFor('splice attached', async () => state.out !== undefined, 5000);
    // The client reads nothing: past what the socket holds, the bytes stay unread in the stream.
    const frame = encodeEvent({ data: 'y'.repeat(64 * 1024) });
    for (let i = 0; i < 400 && state.out!.unread < 1024 * 1024; i++) {
      state.out!.write(frame);
      await Bun.sleep(1);
    }
    expect(state.out!.unread).toBeGreaterThanOrEqual(1024 * 1024);
    const takenBefore = state.taken;
    // The client reads again: once it has what was pushed back on, nothing is unread and taken is called.
    const reader = res.body!.getReader();
    const reading = (async () => {
      while (!(await reader.read()).done);
    })().catch(() => undefined);
    await waitFor('caught up', async () => state.taken > takenBefore && state.out!.unread === 0, 10_000);
    abort.abort();
    await reading;
    await waitFor('producer finally', async () => probes.get('/splice-slow')!.finallyRan, 5000);
    expect(state.out!.signal.aborted).toBe(true);
  });
});
