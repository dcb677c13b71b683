// The scale-out bus: the same interface over a NATS server. Queries use a queue group per
// subject so exactly one replica answers; events fan out to every subscriber.
import { connect, type NatsConnection, type Subscription } from 'nats';
import { createLogger, errorFields, type Logger } from '../runtime';
import {
  busNoAnswerer,
  busTimeout,
  DEFAULT_REQUEST_TIMEOUT_MS,
  errorEnvelope,
  unwrap,
  type Bus,
  type Envelope,
} from './bus';

const enc = new TextEncoder();
const dec = new TextDecoder();

export async function createNatsBus(url: string, log: Logger = createLogger({ component: 'bus' })): Promise<Bus> {
  // nats.js does not read credentials from the URL: `nats://user:pass@host:port` is split here.
  const u = new URL(url);
  const auth = u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : {};
  const nc: NatsConnection = await connect({ servers: `${u.hostname}:${u.port || 4222}`, name: 'keel', maxReconnectAttempts: -1, ...auth });
  const subs = new Set<Subscription>();

  const track = (sub: Subscription) => {
    subs.add(sub);
    return () => {
      subs.delete(sub);
      sub.unsubscribe();
    };
  };

  return {
    async publish(subject, payload) {
      nc.publish(subject, enc.encode(JSON.stringify(payload)));
    },
    subscribe(pattern, handler) {
      const sub = nc.subscribe(pattern, {
        callback: async (err, msg) => {
          if (err) return log.error('subscription failed', { pattern, ...errorFields(err) });
          try {
            await handler(JSON.parse(dec.decode(msg.data)), msg.subject as never);
          } catch (e) {
            log.error('subscriber failed', { subject: msg.subject, ...errorFields(e) });
          }
        },
      });
      return track(sub);
    },
    async request(subject, payload, opts) {
      try {
        const msg = await nc.request(subject, enc.encode(JSON.stringify(payload)), {
          timeout: opts?.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
        });
        return unwrap(JSON.parse(dec.decode(msg.data)) as Envelope) as never;
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === '503') throw busNoAnswerer(subject);
        if (code === 'TIMEOUT') throw busTimeout(subject);
        throw e;
      }
    },
    answer(subject, handler) {
      const sub = nc.subscribe(subject, {
        queue: `keel.${subject}`,
        callback: async (err, msg) => {
          if (err) return log.error('answerer failed', { subject, ...errorFields(err) });
          let env: Envelope;
          try {
            env = { ok: true, data: await handler(JSON.parse(dec.decode(msg.data))) };
          } catch (e) {
            env = errorEnvelope(e);
          }
          msg.respond(enc.encode(JSON.stringify(env)));
        },
      });
      return track(sub);
    },
    async close() {
      for (const s of subs) s.unsubscribe();
      subs.clear();
      await nc.drain();
    },
  };
}
