// A JetStream durable consumer that keeps each order key's events in order across a failure, and
// stores an event that keeps failing on `dlq.<subject>` instead of dropping it.
//
// Why in-process sequencing: a nak lets the server deliver the key's later events before the
// redelivery (the order a webhook receiver sees breaks), and a consumer per key would need the key in
// the subject (the subjects are fixed by CONTRACT "Bus subjects"). So the consumer pulls freely, puts
// each event in the lane of its order key, and a lane runs one event at a time: a failed event is
// tried again in this process, with its ack and those of its successors held (kept alive with
// `working()`), until it succeeds or is dead-lettered. Other lanes keep going. If the process dies,
// the server redelivers every unacknowledged event after `ack_wait`, in stream order, and nothing
// after the failed one was acknowledged. A copy handled twice (an ack lost) is what consumers'
// once-per-event-id absorbs. The order holds per consuming process: replicas of one durable share its
// events between them, so a key's events may run on two of them at once (run one replica of a
// consumer whose effects must be ordered).
import { headers } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, JetStreamApiError, type ConsumerConfig, type ConsumerInfo, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { errorFields, type Logger } from '../runtime';
import { orderKeyOf } from './bus';

const dec = new TextDecoder();

/** Where events that failed every attempt are stored for inspection (`nats stream view KEEL_DEAD_LETTERS`). */
export const DEAD_LETTER_STREAM = 'KEEL_DEAD_LETTERS';
export const deadLetterSubject = (subject: string) => `dlq.${subject}`;
/** Headers of a dead letter: the consumer that gave up, how many times it tried, and why (the last error's message). */
export const DEAD_LETTER_HEADERS = { consumer: 'Keel-Consumer', deliveries: 'Keel-Deliveries', error: 'Keel-Error', sequence: 'Keel-Stream-Sequence' } as const;

export interface OrderedConsumerOptions {
  /** Attempts of one event before it goes to `dlq.<subject>` (APP_BUS_MAX_DELIVER). */
  maxDeliver: number;
  /** How long the server waits for an ack before redelivering; held events are kept alive meanwhile. */
  ackWaitMs: number;
  /** Pause before attempt `n + 1` after `n` failed. */
  retryDelayMs: (attempt: number) => number;
}

/**
 * Events one consumer holds unacknowledged at most (the server stops delivering past it). A key held
 * by a failing event keeps its later events here, so this bounds what one failing tenant can take
 * before others wait; at 10,000 it takes a tenant producing thousands of events during the minutes
 * of retries.
 */
export const MAX_ACK_PENDING = 10_000;

export const defaultRetryDelayMs = (attempt: number) => Math.min(1000 * attempt, 30_000);

interface Held {
  msg: JsMsg;
}

/**
 * Creates (or brings up to date) the durable consumer `name` of `stream` and handles its events until
 * `signal` aborts or the subscription ends (the caller re-attaches). Resolves when it ended.
 */
export async function runOrderedConsumer(deps: {
  jsm: JetStreamManager;
  js: JetStreamClient;
  stream: string;
  name: string;
  subject: string;
  handler: (payload: unknown, subject: string) => unknown;
  opts: OrderedConsumerOptions;
  log: Logger;
  signal: AbortSignal;
}): Promise<void> {
  const { jsm, js, stream, name, subject, handler, opts, log, signal } = deps;
  const config: Partial<ConsumerConfig> = {
    durable_name: name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: subject,
    ack_wait: opts.ackWaitMs * 1e6,
    // The server never gives up on an event by itself (it would drop it silently): attempts are
    // counted here and the last one ends on the dead-letter subject.
    max_deliver: -1,
    max_ack_pending: MAX_ACK_PENDING,
  };
  const info = await ensureConsumer(jsm, stream, name, config);
  if (info.num_ack_pending > 0) {
    // Events an earlier run (a process that died) took and never acknowledged come back once their
    // ack_wait is over, and the server hands redeliveries out before new events. Pulling now would
    // get their keys' later events first; waiting one ack_wait keeps the order.
    log.info('waiting for the events a previous run left unacknowledged', { durable: name, pending: info.num_ack_pending });
    await abortableSleep(opts.ackWaitMs + 1000, signal);
    if (signal.aborted) return;
  }
  const consumer = await js.consumers.get(stream, name);
  const messages = await consumer.consume({ max_messages: 256 });
  const stop = () => void messages.stop();
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) stop();

  const held = new Map<number, Held>(); // by stream sequence
  const lanes = new Map<string, Promise<void>>(); // each order key's last queued event
  // Held events would be redelivered after ack_wait while they wait their turn: say they are in progress.
  const keepAlive = setInterval(() => {
    try {
      for (const h of held.values()) h.msg.working();
    } catch {
      // The connection is closing: the server redelivers them after ack_wait, in order.
    }
  }, Math.max(50, Math.floor(opts.ackWaitMs / 3)));

  const ended = () => signal.aborted;

  async function handle(h: Held, payload: unknown, parsed: boolean) {
    const seq = h.msg.seq;
    // Each earlier delivery was at least one attempt (a process that died, a lost ack).
    let attempts = h.msg.info.deliveryCount - 1;
    let why: unknown = parsed ? new Error(`delivered ${attempts} times without an acknowledgement (a consumer that died or stalled)`) : new Error('the event is not JSON');
    while (!ended()) {
      if (!parsed || attempts >= opts.maxDeliver) {
        if (await deadLetter(h, attempts, why)) break;
        await abortableSleep(opts.retryDelayMs(1), signal);
        continue;
      }
      attempts++;
      try {
        await handler(payload, h.msg.subject);
        h.msg.ack();
        break;
      } catch (e) {
        why = e;
        log.error('consumer failed; the event is tried again before later events of its key', {
          durable: name,
          subject: h.msg.subject,
          attempt: attempts,
          maxDeliver: opts.maxDeliver,
          ...errorFields(e),
        });
        if (attempts < opts.maxDeliver) await abortableSleep(opts.retryDelayMs(attempts), signal);
      }
    }
    // Stopped: left unacknowledged, the server redelivers it (and its successors) after ack_wait.
    held.delete(seq);
  }

  async function deadLetter(h: Held, attempts: number, why: unknown): Promise<boolean> {
    const m = h.msg;
    const hdrs = headers();
    hdrs.set(DEAD_LETTER_HEADERS.consumer, name);
    hdrs.set(DEAD_LETTER_HEADERS.deliveries, String(attempts));
    hdrs.set(DEAD_LETTER_HEADERS.sequence, String(m.seq));
    hdrs.set(DEAD_LETTER_HEADERS.error, (why instanceof Error ? why.message : String(why ?? 'unknown')).replace(/[\r\n]+/g, ' ').slice(0, 512));
    try {
      // The message id makes a second dead-lettering of the same event (after a crash) a no-op.
      await js.publish(deadLetterSubject(m.subject), m.data, { msgID: `${name}:${m.seq}`, headers: hdrs, timeout: 5000 });
    } catch (e) {
      log.warn('a failed event could not be stored on its dead-letter subject yet; retrying', { durable: name, subject: m.subject, ...errorFields(e) });
      return false;
    }
    m.ack();
    log.error('event dead-lettered after failing every attempt', {
      durable: name,
      subject: m.subject,
      deadLetterSubject: deadLetterSubject(m.subject),
      streamSequence: m.seq,
      attempts,
      ...errorFields(why),
    });
    return true;
  }

  try {
    for await (const m of messages) {
      const known = held.get(m.seq);
      if (known) {
        // A redelivery of an event still waiting here (a keep-alive was lost): it keeps its place; the newest delivery is the one acknowledged.
        known.msg = m;
        continue;
      }
      const h: Held = { msg: m };
      held.set(m.seq, h);
      let payload: unknown;
      let parsed = true;
      try {
        payload = JSON.parse(dec.decode(m.data));
      } catch {
        parsed = false;
      }
      const key = orderKeyOf(m.subject, payload);
      // A lane never rejects (an ack on a closed connection throws): a rejected link would skip every later event of its key.
      const lane = (lanes.get(key) ?? Promise.resolve()).then(() =>
        handle(h, payload, parsed).catch((e) => {
          held.delete(m.seq);
          log.warn('event left unacknowledged; the server gives it again', { durable: name, subject: m.subject, ...errorFields(e) });
        }),
      );
      lanes.set(key, lane);
      void lane.finally(() => {
        if (lanes.get(key) === lane) lanes.delete(key);
      });
    }
  } finally {
    signal.removeEventListener('abort', stop);
    // The lanes finish (or see the stop) before the caller re-attaches, their events kept alive meanwhile.
    await Promise.allSettled([...lanes.values()]);
    clearInterval(keepAlive);
  }
}

/** Adds the consumer, or updates one made by an earlier version (other attempts, ack wait or pending limit). */
async function ensureConsumer(jsm: JetStreamManager, stream: string, name: string, config: Partial<ConsumerConfig>): Promise<ConsumerInfo> {
  let info: ConsumerInfo;
  try {
    info = await jsm.consumers.info(stream, name);
  } catch (e) {
    if (!(e instanceof JetStreamApiError) || e.code !== 10014) throw e; // 10014: consumer not found
    return jsm.consumers.add(stream, config);
  }
  const c = info.config;
  if (c.max_deliver !== config.max_deliver || c.ack_wait !== config.ack_wait || c.max_ack_pending !== config.max_ack_pending) {
    await jsm.consumers.update(stream, name, { max_deliver: config.max_deliver, ack_wait: config.ack_wait, max_ack_pending: config.max_ack_pending });
  }
  return info;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
