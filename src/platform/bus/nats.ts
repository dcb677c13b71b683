// The scale-out bus: the same interface over a NATS server. Queries use a queue group per subject
// so exactly one replica answers; events fan out to every subscriber; durable events (DURABLE_EVENTS)
// go through JetStream so a consumer that was down, or a server restart, loses none of them.
import { AuthorizationError, connect, headers, NoRespondersError, RequestError, TimeoutError, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, JetStreamApiError, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { createLogger, errorFields, systemClock, type Clock, type Logger } from '../runtime';
import {
  busFailure,
  busNoAnswerer,
  busTimeout,
  busUnavailable,
  DEFAULT_REQUEST_TIMEOUT_MS,
  failureError,
  SERVICE_ERROR_CODE_HEADER,
  SERVICE_ERROR_HEADER,
  orderKeyOf,
  type Bus,
  type BusFailure,
} from './bus';
import { DEAD_LETTER_STREAM, defaultRetryDelayMs, runOrderedConsumer } from './jetstream-consumer';
import { DURABLE_EVENTS } from './subjects';

const enc = new TextEncoder();
const dec = new TextDecoder();

export const EVENT_STREAM = 'KEEL_EVENTS';
const DAY_NS = 24 * 3600 * 1e9;
const durableSubjects = new Set<string>(DURABLE_EVENTS);

export interface NatsBusOptions {
  /** Connection name shown by the server (`nats-server` monitoring); never carries the credentials. */
  name?: string;
  /** How long durable events are kept in the stream (default 7 days). */
  retentionDays?: number;
  /** Times the shutdown grace for durable events still waiting (default: the system clock). */
  clock?: Clock;
  /** Attempts of a durable event by one consumer before it goes to `dlq.<subject>` (APP_BUS_MAX_DELIVER, default 50). */
  maxDeliver?: number;
  /** How long JetStream waits for a consumer's ack before redelivering (default 10 s; events held in process are kept alive): after a crash, held events come back after it. */
  ackWaitMs?: number;
  /** Pause before attempt n + 1 of an event that failed n times (default n s, at most 30 s). */
  retryDelayMs?: (attempt: number) => number;
}

export const DEFAULT_MAX_DELIVER = 50;

/** `nats://user:pass@host:port[,host2:port]` -> servers without credentials, plus the credentials. */
export function parseBusUrl(url: string): { servers: string[]; user?: string; pass?: string } {
  const m = /^nats:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?(.+)$/.exec(url);
  if (!m) throw new Error('APP_BUS is not a nats:// URL');
  const servers = m[3]!.split(',').map((h) => `nats://${h.replace(/\/+$/, '')}`);
  const user = m[1] ? decodeURIComponent(m[1]) : undefined;
  const pass = m[2] !== undefined ? decodeURIComponent(m[2]) : undefined;
  return { servers, user, pass };
}

/** The server list with any credentials cut out: the only form of APP_BUS that reaches a log. */
export const redactBusUrl = (url: string) => url.replace(/\/\/[^@/]*@/, '//[redacted]@');

export async function createNatsBus(url: string, log: Logger = createLogger({ component: 'bus' }), opts: NatsBusOptions = {}): Promise<Bus> {
  const { servers, user, pass } = parseBusUrl(url);
  let nc: NatsConnection;
  try {
    nc = await connect({ servers, user, pass, name: opts.name ?? 'keel', maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 10_000 });
  } catch (e) {
    // The client's messages can quote the server list; ours name the variable and nothing in it.
    if (e instanceof AuthorizationError) throw new Error('the NATS server refused the user and password of APP_BUS');
    throw new Error(`cannot reach the NATS server of APP_BUS (${(e as Error).name || 'connection failed'})`);
  }
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect') log.info(`bus ${s.type}`, { server: redactBusUrl(s.server) });
    }
  })();
  const subs = new Set<Subscription>();
  const consumerStops = new Set<() => void>();
  let closed = false;

  // JetStream: the stream of durable events, made (or widened) on connect. A server without
  // JetStream still works, but durable events then travel as plain events (at most once).
  let jsm: JetStreamManager | undefined;
  let js: JetStreamClient | undefined;
  try {
    jsm = await jetstreamManager(nc, { timeout: 3000 });
    const config = { name: EVENT_STREAM, subjects: [...DURABLE_EVENTS], storage: StorageType.File, max_age: (opts.retentionDays ?? 7) * DAY_NS };
    try {
      const info = await jsm.streams.info(EVENT_STREAM);
      const missing = DURABLE_EVENTS.filter((s) => !info.config.subjects?.includes(s));
      if (missing.length) await jsm.streams.update(EVENT_STREAM, { ...info.config, subjects: [...(info.config.subjects ?? []), ...missing] });
    } catch (e) {
      if (!(e instanceof JetStreamApiError) || e.code !== 10059) throw e; // 10059: stream not found
      await jsm.streams.add(config);
    }
    // Events a consumer gave up on (dlq.<subject>), kept like the events themselves for inspection.
    try {
      await jsm.streams.info(DEAD_LETTER_STREAM);
    } catch (e) {
      if (!(e instanceof JetStreamApiError) || e.code !== 10059) throw e;
      await jsm.streams.add({ name: DEAD_LETTER_STREAM, subjects: ['dlq.>'], storage: StorageType.File, max_age: config.max_age });
    }
    js = jetstream(nc);
  } catch (e) {
    jsm = undefined;
    log.warn('JetStream is not available on the NATS server (start it with -js): durable events are delivered at most once', errorFields(e));
  }

  // Durable publishes wait in order until the stream acknowledges them, so a server restart
  // in between delays them instead of losing them. The message id makes a retried send a no-op.
  // Each entry settles the publish() that queued it once the stream stored it.
  const outbox: { subject: string; data: Uint8Array; msgID: string; key: string; stored: () => void; dropped: (e: Error) => void }[] = [];
  let draining: Promise<void> | undefined;
  // Up to WINDOW sends in flight, at most one per order key: an event is sent once the one before
  // it of its key is stored. Sending a key's events together would let event k time out (a server
  // restart) while k+1 is stored, and k, sent again, would be stored after it: consumers would see
  // the key's events out of order. Different keys have no order to keep, so they share the window.
  const WINDOW = 64;
  // How far into the outbox a pass looks for the head of each key (a long run of one key stays cheap).
  const LOOK_AHEAD = 1024;
  const drain = () =>
    (draining ??= (async () => {
      let wait = 100;
      while (outbox.length && !closed) {
        const keys = new Set<string>();
        const batch: typeof outbox = [];
        for (let i = 0; i < outbox.length && i < LOOK_AHEAD && batch.length < WINDOW; i++) {
          const m = outbox[i]!;
          if (keys.has(m.key)) continue;
          keys.add(m.key);
          batch.push(m);
        }
        const sent = await Promise.allSettled(batch.map((m) => js!.publish(m.subject, m.data, { msgID: m.msgID, timeout: 5000 })));
        const done = new Set(batch.filter((_, i) => sent[i]!.status === 'fulfilled'));
        if (done.size) {
          // Compacted in place: an outage can leave hundreds of thousands waiting (no spread of them).
          let kept = 0;
          for (const m of outbox) if (!done.has(m)) outbox[kept++] = m;
          outbox.length = kept;
          for (const m of done) m.stored();
        }
        const failed = sent.findIndex((r) => r.status === 'rejected');
        if (failed === -1) {
          wait = 100;
          continue;
        }
        const why = (sent[failed] as PromiseRejectedResult).reason;
        log.warn('durable event not stored yet, retrying', { subject: batch[failed]!.subject, pending: outbox.length, ...errorFields(why) });
        await Bun.sleep(wait);
        wait = Math.min(wait * 2, 2000);
      }
    })().finally(() => (draining = undefined)));

  const track = (sub: Subscription) => {
    subs.add(sub);
    return () => {
      subs.delete(sub);
      sub.unsubscribe();
    };
  };

  const bus: Bus = {
    async publish(subject, payload, popts) {
      const data = enc.encode(JSON.stringify(payload));
      if (js && durableSubjects.has(subject)) {
        // An event id (outbox events) is the message id, so a resend after a crash is dropped by the stream.
        const eventId = (payload as { eventId?: unknown }).eventId;
        const msgID = typeof eventId === 'string' ? eventId : crypto.randomUUID();
        const stored = new Promise<void>((stored, dropped) => {
          outbox.push({ subject, data, msgID, key: orderKeyOf(subject, payload), stored, dropped });
          void drain();
        });
        if (popts?.untilStored) return stored;
        stored.catch(() => {}); // reported by close()
        return;
      }
      nc.publish(subject, data);
    },
    subscribe(pattern, handler) {
      const sub = nc.subscribe(pattern, {
        callback: (err, msg) => void (async () => {
          if (err) return log.error('subscription failed', { pattern, ...errorFields(err) });
          try {
            await handler(JSON.parse(dec.decode(msg.data)), msg.subject as never);
          } catch (e) {
            log.error('subscriber failed', { subject: msg.subject, ...errorFields(e) });
          }
        })(),
      });
      return track(sub);
    },
    consume(durable, subject, handler) {
      if (!jsm || !js) {
        // No JetStream: replicas of the consumer share the events like a durable consumer would.
        const sub = nc.subscribe(subject, {
          queue: `keel.durable.${durable}`,
          callback: (_err, msg) => void (async () => {
            try {
              await handler(JSON.parse(dec.decode(msg.data)), msg.subject as never);
            } catch (e) {
              log.error('consumer failed', { durable, subject, ...errorFields(e) });
            }
          })(),
        });
        return track(sub);
      }
      let stopped = false;
      const stopping = new AbortController();
      const name = `${durable}-${subject.replace(/[^A-Za-z0-9_-]/g, (c) => (c === '*' ? 'all' : '_'))}`;
      const consumerOpts = {
        maxDeliver: opts.maxDeliver ?? DEFAULT_MAX_DELIVER,
        ackWaitMs: opts.ackWaitMs ?? 10_000,
        retryDelayMs: opts.retryDelayMs ?? defaultRetryDelayMs,
      };
      void (async () => {
        // Re-attach after any failure (server restart, consumer lost) until stopped.
        while (!stopped && !closed) {
          try {
            await runOrderedConsumer({
              jsm: jsm!,
              js: js!,
              stream: EVENT_STREAM,
              name,
              subject,
              handler: handler as (payload: unknown, subject: string) => unknown,
              opts: consumerOpts,
              log,
              signal: stopping.signal,
            });
          } catch (e) {
            if (!stopped && !closed) log.warn('durable consumer interrupted, re-attaching', { durable, subject, ...errorFields(e) });
          }
          if (!stopped && !closed) await Bun.sleep(500);
        }
      })();
      const stop = () => {
        stopped = true;
        stopping.abort();
      };
      consumerStops.add(stop);
      return () => {
        consumerStops.delete(stop);
        stop();
      };
    },
    async request(subject, payload, opts) {
      let msg: Msg;
      try {
        msg = await nc.request(subject, enc.encode(JSON.stringify(payload)), { timeout: opts?.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS });
      } catch (e) {
        if (e instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders())) throw busNoAnswerer(subject);
        if (e instanceof TimeoutError || (e instanceof RequestError && e.cause instanceof TimeoutError)) throw busTimeout(subject);
        if (nc.isClosed() || nc.isDraining() || e instanceof RequestError) throw busUnavailable(subject);
        throw e;
      }
      const failed = msg.headers?.get(SERVICE_ERROR_CODE_HEADER);
      if (failed) {
        let body: Partial<BusFailure> = {};
        try {
          body = JSON.parse(dec.decode(msg.data));
        } catch {
          // Another NATS service answering with the headers alone: the headers say enough.
        }
        throw failureError({
          code: typeof body.code === 'string' ? body.code : 'BUS_ANSWER_FAILED',
          status: Number(failed) || 500,
          message: msg.headers?.get(SERVICE_ERROR_HEADER) || 'the answering service failed',
          details: body.details,
          retryable: body.retryable,
        });
      }
      return JSON.parse(dec.decode(msg.data));
    },
    answer(subject, handler, errors) {
      const sub = nc.subscribe(subject, {
        queue: `keel.${subject}`,
        callback: (err, msg) => void (async () => {
          if (err) return log.error('answerer failed', { subject, ...errorFields(err) });
          try {
            // The bare reply object of the subject: no envelope (CONTRACT "Bus replies").
            msg.respond(enc.encode(JSON.stringify((await handler(JSON.parse(dec.decode(msg.data)))) ?? null)));
          } catch (e) {
            const failure = busFailure(e, errors);
            const h = headers();
            h.set(SERVICE_ERROR_HEADER, failure.message);
            h.set(SERVICE_ERROR_CODE_HEADER, String(failure.status));
            msg.respond(enc.encode(JSON.stringify(failure)), { headers: h });
          }
        })(),
      });
      return track(sub);
    },
    async close() {
      // Durable events still waiting get a short grace to reach the stream.
      const clock = opts.clock ?? systemClock;
      const until = clock.now() + 5000;
      while (outbox.length && clock.now() < until && !nc.isClosed()) await Bun.sleep(20);
      if (outbox.length) log.warn('durable events not stored at shutdown', { pending: outbox.length });
      for (const m of outbox.splice(0)) m.dropped(busUnavailable(m.subject));
      closed = true;
      for (const stop of consumerStops) stop();
      consumerStops.clear();
      for (const s of subs) s.unsubscribe();
      subs.clear();
      if (!nc.isClosed()) await nc.drain().catch(() => {});
    },
  };
  return bus;
}
