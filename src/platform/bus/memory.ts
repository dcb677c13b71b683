// The in-process bus. Payloads go through JSON like on NATS, so nothing works here that would break there.
import { createLogger, errorFields, type Logger } from '../runtime';
import {
  busNoAnswerer,
  busTimeout,
  DEFAULT_REQUEST_TIMEOUT_MS,
  busFailure,
  failureError,
  orderKeyOf,
  subjectMatches,
  type Bus,
  type BusFailure,
} from './bus';
import type { ErrorTable } from '../errors';

type AnyHandler = (payload: any, subject: any) => unknown;
/** Deliveries of one durable event to a consumer that keeps throwing, before it is logged and dropped. */
const REDELIVERIES = 5;

export function createMemoryBus(log: Logger = createLogger({ component: 'bus' })): Bus {
  const subscribers = new Set<{ pattern: string; handler: AnyHandler }>();
  const answerers = new Map<string, { handler: AnyHandler; errors: ErrorTable }[]>();
  const consumers = new Map<string, { members: AnyHandler[]; turn: number; off: () => void }>();
  let turn = 0;

  const bus: Bus = {
    async publish(subject, payload) {
      const json = JSON.stringify(payload);
      for (const sub of subscribers) {
        if (!subjectMatches(sub.pattern, subject)) continue;
        // Delivered after the publisher's turn, like a broker would; one failure stays local.
        queueMicrotask(async () => {
          try {
            await sub.handler(JSON.parse(json), subject);
          } catch (e) {
            log.error('subscriber failed', { subject, ...errorFields(e) });
          }
        });
      }
    },
    subscribe(pattern, handler) {
      const entry = { pattern, handler: handler as AnyHandler };
      subscribers.add(entry);
      return () => void subscribers.delete(entry);
    },
    consume(durable, subject, handler) {
      // Nothing outlives the process, but the rest of the contract holds as on JetStream: one
      // member of a named consumer gets each event, and a handler that throws gets it again.
      // Like on JetStream, an event that fails is tried again before the later events of its order
      // key (orderKeyOf), while other keys go on.
      const key = `${durable}\u0000${subject}`;
      const group = consumers.get(key) ?? { members: [] as AnyHandler[], turn: 0, off: () => {} };
      if (group.members.length === 0) {
        consumers.set(key, group);
        const lanes = new Map<string, Promise<void>>();
        const deliver = async (payload: unknown, subj: string) => {
          for (let attempt = 1; group.members.length; attempt++) {
            const member = group.members[group.turn++ % group.members.length]!;
            try {
              await member(payload, subj);
              return;
            } catch (e) {
              if (attempt >= REDELIVERIES) {
                log.error('consumer failed on every attempt; the event is dropped (in process)', { durable, subject: subj, attempts: attempt, ...errorFields(e) });
                return;
              }
              log.error('consumer failed; the event is tried again before later events of its key', { durable, subject: subj, attempt, ...errorFields(e) });
              await Bun.sleep(50 * attempt);
            }
          }
        };
        group.off = bus.subscribe(subject, (payload, subj) => {
          const order = orderKeyOf(subj, payload);
          const lane = (lanes.get(order) ?? Promise.resolve()).then(() => deliver(payload, subj));
          lanes.set(order, lane);
          void lane.finally(() => {
            if (lanes.get(order) === lane) lanes.delete(order);
          });
        });
      }
      group.members.push(handler as AnyHandler);
      return () => {
        group.members.splice(group.members.indexOf(handler as AnyHandler), 1);
        if (group.members.length === 0) {
          group.off();
          consumers.delete(key);
        }
      };
    },
    async request(subject, payload, opts) {
      const list = answerers.get(subject);
      if (!list || list.length === 0) throw busNoAnswerer(subject);
      const { handler, errors } = list[turn++ % list.length]!;
      const timeoutMs = opts?.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
      const req = JSON.parse(JSON.stringify(payload));
      let timer: ReturnType<typeof setTimeout> | undefined;
      // The same semantics as on NATS: the bare reply, or the answerer's failure as a typed error.
      const answer = (async (): Promise<{ reply: unknown } | { failure: BusFailure }> => {
        try {
          return { reply: await handler(req, subject) };
        } catch (e) {
          return { failure: busFailure(e, errors) };
        }
      })();
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(busTimeout(subject)), timeoutMs);
      });
      try {
        const out = await Promise.race([answer, timeout]);
        if ('failure' in out) throw failureError(JSON.parse(JSON.stringify(out.failure)));
        return JSON.parse(JSON.stringify(out.reply ?? null));
      } finally {
        clearTimeout(timer);
      }
    },
    answer(subject, handler, errors) {
      const list = answerers.get(subject) ?? [];
      const entry = { handler: handler as AnyHandler, errors };
      list.push(entry);
      answerers.set(subject, list);
      return () => {
        const l = answerers.get(subject);
        const at = l?.indexOf(entry) ?? -1;
        if (at >= 0) l!.splice(at, 1);
      };
    },
    async close() {
      subscribers.clear();
      answerers.clear();
      consumers.clear();
    },
  };
  return bus;
}
