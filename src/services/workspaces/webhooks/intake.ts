// The outbox's intake: events in, deliveries recorded. A workspace event from the bus (acted on once
// per event id), a ping, a redelivery, or the notice that a webhook was disabled becomes delivery rows
// in one transaction; once it committed, `written` tells the dispatcher (dispatcher.ts) there is
// something to send. Nothing here sends.
//
// Order: deliveries that share an order key (one workspace, per registration) go out one at a time
// in the order they were received: a new one is head of its key only when nothing of that key is
// pending before it (the dispatcher makes the next one head when a head ends). Pings and
// redeliveries have no key.
import type { Bus } from '../../../platform/bus/bus';
import type { WorkspaceEventPayload, WORKSPACE_EVENTS } from '../../../platform/bus/subjects';
import { createEventInbox } from '../../../platform/bus/event-outbox';
import type { Orm, Store } from '../../../platform/store';
import { isoNow, newId, type Clock } from '../../../platform/runtime';
import { nextDelayMs } from './retry-schedule';
import type { WebhooksConfig } from './webhooks.config';
import type { WebhooksRepository } from './webhooks.repository';
import { webhooksTables, type DeliveryRow, type DisabledReason, type RegistrationRow } from './webhooks.tables';

type WorkspaceSubject = (typeof WORKSPACE_EVENTS)[number];

export interface IntakeDeps {
  /** For the event inbox (platform/bus/event-outbox.ts): the ids of the bus events acted on. */
  store: Store;
  repository: WebhooksRepository;
  clock: Clock;
  config: Pick<WebhooksConfig, 'retrySchedule'>;
  /** Source of jitter, in [0, 1). */
  random: () => number;
  /** Deliveries were written and committed: the dispatcher has something to send. */
  written(): void;
}

/** A check run in the transaction of a write it guards (the pending quota of pings and redeliveries); throws to refuse. */
export type Admit = (tx: Orm) => Promise<void>;

/** The delivery body of a workspace event (the spec's payload: event, timestamp, workspace.id, workspace.status). */
export function workspaceEventBody(p: WorkspaceEventPayload): string {
  const { id, name, status, reason } = p.workspace;
  return JSON.stringify({ event: p.event, timestamp: p.timestamp, workspace: { id, name, status, ...(reason ? { reason } : {}) } });
}

const subscribes = (reg: RegistrationRow, event: string) => reg.events.includes('*') || reg.events.includes(event);

export function createIntake(deps: IntakeDeps) {
  const { repository: q, clock, config, random } = deps;
  const seen = createEventInbox({ store: deps.store, table: webhooksTables(deps.store.dialect).eventInbox, clock });
  let unsubscribe: (() => void) | undefined;

  async function insertDelivery(tx: Orm, registrationId: string, event: string, body: string, orderKey: string | null): Promise<DeliveryRow> {
    // A delivery is head of its key when nothing of that key is pending before it.
    if (orderKey !== null) await q.lockOrder(tx, registrationId, orderKey);
    const head = orderKey === null || (await q.pendingOfKey(registrationId, orderKey, tx)) === undefined;
    const at = clock.now() + (nextDelayMs(config.retrySchedule, 0, random) ?? 0);
    return q.insertDelivery({ id: newId('msg', clock), reg: registrationId, event, key: orderKey, head, payload: body, at, createdAt: isoNow(clock) }, tx);
  }

  /**
   * One delivery per active registration that subscribes to `event` and may see the workspace of
   * `owner`, written through `tx`. Returns how many rows were written.
   */
  async function writeEvent(tx: Orm, event: string, owner: string, body: string, orderKey: string | null, except?: string): Promise<number> {
    const targets = (await q.activeRegistrations(tx)).filter((r) => r.id !== except && (r.owner === owner || r.allWorkspaces) && subscribes(r, event));
    for (const reg of targets) await insertDelivery(tx, reg.id, event, body, orderKey);
    return targets.length;
  }

  /** writeEvent() in a transaction of its own; the dispatcher is told once it committed. */
  async function enqueueEvent(event: string, owner: string, body: string, orderKey: string | null, except?: string): Promise<number> {
    const n = await q.transaction((tx) => writeEvent(tx, event, owner, body, orderKey, except));
    if (n > 0) deps.written();
    return n;
  }

  /** Ends every pending delivery of a registration that no longer receives (disabled or turned off). */
  async function failPending(registrationId: string, why: string) {
    await q.transaction((tx) => q.failPending(registrationId, why, tx));
  }

  return {
    enqueueEvent,
    failPending,

    /** A delivery to one registration whatever it subscribes to (ping), written only if `admit` lets it. */
    async enqueueTo(reg: Pick<RegistrationRow, 'id'>, event: string, body: string, admit?: Admit): Promise<DeliveryRow> {
      const row = await q.transaction(async (tx) => {
        await admit?.(tx);
        return insertDelivery(tx, reg.id, event, body, null);
      });
      deps.written();
      return row;
    },

    /**
     * Sends a delivery again with the same id. An ended one is sent at once, outside the order (an
     * explicit request of its owner), if `admit` lets it; a pending one keeps its place and is due now,
     * in a new round.
     */
    async redeliver(seq: number, admit?: Admit): Promise<'queued' | 'in-flight'> {
      const now = clock.now();
      const queued = await q.transaction(async (tx) => {
        const d = await q.deliveryBySeq(seq, tx);
        if (!d) return false;
        if (d.status !== 'pending') await admit?.(tx);
        // Conditional: an attempt in flight (its lease) leaves the row as it is.
        return q.requeue(seq, d.status === 'pending', now, tx);
      });
      if (!queued) return 'in-flight';
      deps.written();
      return 'queued';
    },

    /** A registration the receiver (or time) turned off: its pending deliveries end, and its owner's other registrations hear of it. */
    async disabled(reg: RegistrationRow, reason: DisabledReason) {
      await failPending(reg.id, 'the registration was disabled');
      const body = JSON.stringify({ event: 'webhook.disabled', timestamp: isoNow(clock), webhook: { id: reg.id, reason } });
      await enqueueEvent('webhook.disabled', reg.owner, body, null, reg.id);
    },

    /** Pending deliveries of a registration (what APP_WEBHOOK_MAX_PENDING bounds), read through `tx` when given. */
    pendingOf: (registrationId: string, tx?: Orm) => q.pendingCount(registrationId, tx),

    /**
     * Turns evt.workspace.* into deliveries (called by start() before its first await). One durable
     * consumer keeps the events in order, at least once (on NATS from JetStream, those sent while this
     * service was down too); deliveries and event id share a transaction: a redelivery makes none.
     */
    listen(bus: Bus) {
      unsubscribe ??= bus.consume<WorkspaceSubject>('webhooks', 'evt.workspace.*', async (p) => {
        let written = 0;
        await seen.once(p.eventId, async (tx) => {
          written = await writeEvent(tx, p.event, p.owner, workspaceEventBody(p), `workspace:${p.workspace.id}`);
        });
        if (written > 0) deps.written();
      });
    },

    /** Stops taking events from the bus. */
    unlisten() {
      unsubscribe?.();
    },
  };
}

export type Intake = ReturnType<typeof createIntake>;
