// Per-workspace order on JetStream (CONTRACT wave 4): a failed event is tried again before the later
// events of its workspace while other workspaces flow; an event that fails every attempt is stored on
// dlq.<subject> and logged; a consumer killed mid-stream and started again keeps the order and loses
// nothing; a publish the stream refused and that is tried again is never stored after its successor.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Bus } from '../../../src/platform/bus/bus';
import { DEAD_LETTER_HEADERS, DEAD_LETTER_STREAM } from '../../../src/platform/bus/jetstream-consumer';
import { createNatsBus, EVENT_STREAM } from '../../../src/platform/bus/nats';
import type { WorkspaceEventPayload } from '../../../src/platform/bus/subjects';
import { createLogger, type Logger } from '../../../src/platform/runtime';
import { startTestNats, type TestNats } from '../../helpers/nats';
import { BUN } from '../../helpers/process';
import { waitFor } from '../../helpers/wait';

const quiet = createLogger({}, 'error');
let nats: TestNats;
let raw: NatsConnection;
const buses: Bus[] = [];
beforeAll(async () => {
  nats = await startTestNats();
  raw = await connect({ servers: `127.0.0.1:${nats.port}`, user: nats.user, pass: nats.pass });
});
afterAll(async () => {
  for (const b of buses) await b.close();
  await raw?.close();
  await nats?.close();
});

async function bus(opts: Parameters<typeof createNatsBus>[2] = {}, log: Logger = quiet) {
  const b = await createNatsBus(nats.url, log, opts);
  buses.push(b);
  return b;
}

/** Workspace event `n` of workspace `ws` (its number travels as the workspace name). */
const event = (ws: string, n: number): WorkspaceEventPayload => ({
  eventId: `evt_${ws}_${n}`,
  event: 'workspace.created',
  timestamp: new Date().toISOString(),
  owner: 'dora',
  workspace: { id: ws, name: String(n), status: 'running' },
});

/** The numbers of `ws` in the order they were first seen (a redelivered copy is not a new place). */
function firstSeen(seen: { ws: string; n: number }[], ws: string): number[] {
  const out: number[] = [];
  for (const s of seen) if (s.ws === ws && !out.includes(s.n)) out.push(s.n);
  return out;
}

const range = (to: number) => Array.from({ length: to }, (_, i) => i + 1);

describe('a handler that fails', () => {
  test('a workspace whose event fails once still gets its events in order, and another workspace is not held up meanwhile', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const [a, b] = [`ws-a-${run}`, `ws-b-${run}`];
    const consumer = await bus({ retryDelayMs: () => 1500 });
    const handled: { ws: string; n: number }[] = [];
    let failed = false;
    consumer.consume<'evt.workspace.created'>(`order-${run}`, 'evt.workspace.*', (e) => {
      if (!e.workspace.id.endsWith(run)) return;
      const n = Number(e.workspace.name);
      if (e.workspace.id === a && n === 2 && !failed) {
        failed = true;
        throw new Error('the receiver is down');
      }
      handled.push({ ws: e.workspace.id, n });
    });
    const publisher = await bus();
    for (const n of range(5)) await publisher.publish('evt.workspace.created', event(a, n), { untilStored: true });
    for (const n of range(5)) await publisher.publish('evt.workspace.created', event(b, n), { untilStored: true });

    await waitFor('every event handled', () => firstSeen(handled, a).length === 5 && firstSeen(handled, b).length === 5);
    expect(failed).toBe(true);
    expect(firstSeen(handled, a)).toEqual([1, 2, 3, 4, 5]);
    expect(firstSeen(handled, b)).toEqual([1, 2, 3, 4, 5]);
    // The other workspace went through while the failed event waited for its second attempt.
    const at = (ws: string, n: number) => handled.findIndex((h) => h.ws === ws && h.n === n);
    expect(at(b, 5)).toBeLessThan(at(a, 2));
  });

  test('an event that fails APP_BUS_MAX_DELIVER times is stored on dlq.<subject> and logged, and its workspace goes on', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const ws = `ws-dlq-${run}`;
    const errors: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log: Logger = { child: () => log, debug() {}, info() {}, warn() {}, error: (msg, fields) => void errors.push({ msg, fields }) };
    const consumer = await bus({ maxDeliver: 3, retryDelayMs: () => 50 }, log);
    let attempts = 0;
    const handled: number[] = [];
    consumer.consume<'evt.workspace.stopped'>(`dlq-${run}`, 'evt.workspace.*', (e) => {
      if (e.workspace.id !== ws) return;
      if (e.workspace.name === '1') {
        attempts++;
        throw new Error('this event can never be delivered');
      }
      handled.push(Number(e.workspace.name));
    });
    const publisher = await bus();
    await publisher.publish('evt.workspace.stopped', event(ws, 1), { untilStored: true });
    await publisher.publish('evt.workspace.stopped', event(ws, 2), { untilStored: true });

    await waitFor('the next event handled', () => handled.length === 1);
    expect(attempts).toBe(3);
    expect(handled).toEqual([2]);
    const jsm = await jetstreamManager(raw);
    const dead = await jsm.streams.getMessage(DEAD_LETTER_STREAM, { last_by_subj: 'dlq.evt.workspace.stopped' });
    expect(dead).not.toBeNull();
    expect(dead!.json<WorkspaceEventPayload>().eventId).toBe(`evt_${ws}_1`);
    expect(dead!.header.get(DEAD_LETTER_HEADERS.deliveries)).toBe('3');
    expect(dead!.header.get(DEAD_LETTER_HEADERS.consumer)).toBe(`dlq-${run}-evt_workspace_all`);
    expect(dead!.header.get(DEAD_LETTER_HEADERS.error)).toBe('this event can never be delivered');
    const logged = errors.find((e) => e.msg === 'event dead-lettered after failing every attempt');
    expect(logged?.fields).toMatchObject({ subject: 'evt.workspace.stopped', deadLetterSubject: 'dlq.evt.workspace.stopped', attempts: 3 });
  });
});

describe('an event that keeps coming back unacknowledged', () => {
  test('is dead-lettered without running the handler once its deliveries reach APP_BUS_MAX_DELIVER (a process that dies on it each time)', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const ws = `ws-poison-${run}`;
    const name = `poison-${run}-evt_workspace_all`;
    const publisher = await bus();
    const jsm = await jetstreamManager(raw);
    // The consumer as the bus makes it, taking only what comes from now on.
    await jsm.consumers.add(EVENT_STREAM, { durable_name: name, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, filter_subject: 'evt.workspace.*', ack_wait: 300e6, max_deliver: -1, max_ack_pending: 10_000 });
    await publisher.publish('evt.workspace.paused', event(ws, 1), { untilStored: true });
    // Two processes took it and died before acknowledging it.
    const taker = await jetstream(raw).consumers.get(EVENT_STREAM, name);
    for (let i = 1; i <= 2; i++) expect((await taker.next({ expires: 3000 }))?.info.deliveryCount).toBe(i);

    const consumer = await bus({ ackWaitMs: 300, maxDeliver: 2 });
    let calls = 0;
    consumer.consume<'evt.workspace.paused'>(`poison-${run}`, 'evt.workspace.*', (e) => void (e.workspace.id === ws && calls++));
    const dead = await waitFor('the dead letter', async () => {
      const m = await jsm.streams.getMessage(DEAD_LETTER_STREAM, { last_by_subj: 'dlq.evt.workspace.paused' }).catch(() => null);
      return m && m.json<WorkspaceEventPayload>().workspace.id === ws ? m : null;
    });
    expect(calls).toBe(0);
    expect(dead.header.get(DEAD_LETTER_HEADERS.deliveries)).toBe('2');
    expect(dead.header.get(DEAD_LETTER_HEADERS.error)).toContain('without an acknowledgement');
  });
});

describe('a consumer made by an earlier version', () => {
  test('is brought up to date: the server no longer gives up on an event by itself, and its events flow', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const publisher = await bus();
    const jsm = await jetstreamManager(raw);
    const name = `old-${run}-evt_workspace_all`;
    // The configuration consumers had before: the server dropped an event silently after 50 deliveries.
    await jsm.consumers.add(EVENT_STREAM, { durable_name: name, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: 'evt.workspace.*', ack_wait: 30e9, max_deliver: 50 });
    const consumer = await bus();
    const got: string[] = [];
    consumer.consume<'evt.workspace.created'>(`old-${run}`, 'evt.workspace.*', (e) => void (e.workspace.id === `ws-old-${run}` && got.push(e.eventId)));
    await publisher.publish('evt.workspace.created', event(`ws-old-${run}`, 1), { untilStored: true });
    await waitFor('the event handled', () => got.length === 1);
    const info = await jsm.consumers.info(EVENT_STREAM, name);
    expect(info.config.max_deliver).toBe(-1);
    expect(info.config.ack_wait).toBe(10e9);
  });
});

describe('a consumer process killed mid-stream', () => {
  test('started again, it gets every event, those it held and those published meanwhile, each workspace in order', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const workspaces = ['x', 'y', 'z'].map((w) => `ws-${w}-${run}`);
    const N = 40;
    const publisher = await bus();
    const publish = async (from: number, to: number) => {
      for (let n = from; n <= to; n++) for (const ws of workspaces) await publisher.publish('evt.workspace.started', event(ws, n), { untilStored: true });
    };
    await publish(1, 30);

    const seen: { ws: string; n: number }[] = [];
    const start = () => {
      const proc = Bun.spawn([BUN, `${import.meta.dir}/consumer-process.ts`, nats.url, `killed-${run}`, 'ws-'], { stdout: 'pipe', stderr: 'ignore', env: { ...process.env, NODE_ENV: 'test' } });
      void (async () => {
        let rest = '';
        const dec = new TextDecoder();
        for await (const chunk of proc.stdout) {
          const lines = (rest + dec.decode(chunk, { stream: true })).split('\n');
          rest = lines.pop()!;
          for (const l of lines) if (l.startsWith('{')) seen.push(JSON.parse(l));
        }
      })();
      return proc;
    };
    const first = start();
    await waitFor('the consumer halfway', () => seen.length >= 30, 20_000, 5);
    first.kill('SIGKILL');
    await first.exited;
    expect(seen.length).toBeLessThan(30 * workspaces.length);
    // Events published while it is down: the new run must not hand them out before those the killed one held.
    await publish(31, N);
    const second = start();
    try {
      await waitFor('every event after the restart', () => workspaces.every((ws) => firstSeen(seen, ws).length === N), 25_000);
    } finally {
      second.kill();
      await second.exited;
    }
    for (const ws of workspaces) expect(firstSeen(seen, ws)).toEqual(range(N));
  }, 60_000);
});

describe('the publish window', () => {
  test('an event whose publish is refused and tried again is never stored after the next event of its workspace', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const ws = `ws-pub-${run}`;
    const publisher = await bus();
    const jsm = await jetstreamManager(raw);
    const config = (await jsm.streams.info(EVENT_STREAM)).config;
    // The stream refuses event 1 (too large for it) until its limit is lifted; event 2 fits.
    await jsm.streams.update(EVENT_STREAM, { ...config, max_msg_size: 2048 });
    const large = { ...event(ws, 1), workspace: { id: ws, name: '1', status: 'failed', reason: 'x'.repeat(4096) } };
    let stored;
    try {
      stored = [publisher.publish('evt.workspace.failed', large, { untilStored: true }), publisher.publish('evt.workspace.failed', event(ws, 2), { untilStored: true })];
      await Bun.sleep(500);
    } finally {
      await jsm.streams.update(EVENT_STREAM, { ...config, max_msg_size: -1 });
    }
    await Promise.all(stored);

    const order: number[] = [];
    const reader = await jetstream(raw).consumers.get(EVENT_STREAM, { filter_subjects: 'evt.workspace.failed' });
    for (let i = 0; i < 100 && order.length < 2; i++) {
      const m = await reader.next({ expires: 1000 });
      if (!m) break;
      const e = m.json<WorkspaceEventPayload>();
      if (e.workspace.id === ws) order.push(Number(e.workspace.name));
    }
    expect(order).toEqual([1, 2]);
  });
});
