// Webhook rules: registrations owned by their creator (another actor's is 404), validation of
// targets and event names, the delivery log, ping and redelivery. Recording deliveries and sending them is the outbox's job (intake.ts, dispatcher.ts).
import { WorkspaceErrors } from '../workspaces.errors';
import type { Orm } from '../../../platform/store';
import { canAccess, type Actor } from '../../../platform/auth/workspace-token';
import { isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import type { Outbox } from './outbox';
import { whsecProblem } from './signer';
import { urlRefusal } from './target-policy';
import type { TargetPolicy } from '../../../platform/net/address-policy';
import type { WebhooksConfig } from './webhooks.config';
import {
  WEBHOOK_EVENTS,
  type CreateWebhookInput,
  type DeliveryDetailView,
  type DeliveryView,
  type PatchWebhookInput,
  type WebhookView,
} from './webhooks.model';
import type { WebhooksRepository } from './webhooks.repository';
import type { DeliveryRow, DeliveryStatus, RegistrationRow } from './webhooks.tables';

export interface WebhooksServiceDeps {
  repository: WebhooksRepository;
  clock: Clock;
  log: Logger;
  config: WebhooksConfig;
  outbox: Outbox;
  /** Where targets may point (the platform's rules plus what the service denies). */
  policy: TargetPolicy;
}

const notFound = () => WorkspaceErrors.WEBHOOK_NOT_FOUND('webhook not found');
const deliveryNotFound = () => WorkspaceErrors.DELIVERY_NOT_FOUND('delivery not found');
const invalid = (message: string, property: string) => WorkspaceErrors.INVALID_REQUEST(message, { property });
/** The workspace API's quota answer (quotas.ts has the same shape); `quota` names what is full. */
const quotaExceeded = (quota: 'webhooks' | 'pendingDeliveries', limit: number, message: string) =>
  WorkspaceErrors.QUOTA_EXCEEDED(`quota exceeded: ${quota} (limit ${limit}); ${message}`, { quota, limit });

/** The one view of a registration: never the secret. */
export function webhookView(r: RegistrationRow): WebhookView {
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    active: r.active,
    disabledReason: r.active ? null : (r.disabledReason ?? 'manual'),
    disabledAt: r.active ? null : r.disabledAt,
    failingSince: r.failingSince === null ? null : new Date(r.failingSince).toISOString(),
    allWorkspaces: r.allWorkspaces,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/** The one view of a delivery in the log. */
export function deliveryView(d: DeliveryRow): DeliveryView {
  return {
    id: d.id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    responseStatus: d.responseStatus,
    error: d.status === 'delivered' ? null : d.lastError,
    durationMs: d.lastDurationMs,
    createdAt: d.createdAt,
    lastAttemptAt: d.lastAttemptAt,
    nextAttemptAt: d.status === 'pending' ? new Date(d.nextAttemptAt).toISOString() : null,
    deliveredAt: d.deliveredAt,
  };
}

/** Event names checked against the documented list; duplicates dropped, `*` alone when given. */
function checkEvents(events: string[]): string[] {
  const known = new Set<string>(WEBHOOK_EVENTS);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e !== '*' && !known.has(e)) {
      throw WorkspaceErrors.INVALID_REQUEST(`events/${i} is not a known event name`, { property: `/events/${i}`, known: [...WEBHOOK_EVENTS, '*'] });
    }
  }
  return events.includes('*') ? ['*'] : [...new Set(events)];
}

export function createWebhooksService(deps: WebhooksServiceDeps) {
  const { repository, clock, config, outbox } = deps;

  function checkUrl(url: string) {
    const refusal = urlRefusal(url, deps.policy);
    if (refusal) throw invalid(refusal, '/url');
  }

  function checkSecret(secret: string) {
    const problem = whsecProblem(secret);
    if (problem) throw invalid(problem, '/secret');
  }

  async function getOwned(actor: Actor, id: string): Promise<RegistrationRow> {
    const row = await repository.registrationById(id);
    if (!row || !canAccess(actor, row.owner)) throw notFound();
    return row;
  }

  async function getDelivery(actor: Actor, id: string, deliveryId: string): Promise<DeliveryRow> {
    const reg = await getOwned(actor, id);
    const d = await repository.deliveryOf(reg.id, deliveryId);
    if (!d) throw deliveryNotFound();
    return d;
  }

  /**
   * Pings and redeliveries are what one caller can multiply at will: past APP_WEBHOOK_MAX_PENDING
   * pending deliveries they are refused. Workspace events are never refused (they are what was said).
   * Run in the transaction of the write it guards, under the registration's lock (two processes
   * sharing PostgreSQL too), so two requests cannot both take the last place.
   */
  async function requireRoom(reg: RegistrationRow, tx: Orm) {
    await repository.lockPending(tx, reg.id);
    if ((await outbox.pendingOf(reg.id, tx)) >= config.maxPending) {
      throw quotaExceeded('pendingDeliveries', config.maxPending, 'wait until the receiver has taken some');
    }
  }

  function requireActive(reg: RegistrationRow) {
    if (!reg.active) {
      throw WorkspaceErrors.WEBHOOK_INACTIVE('the webhook is disabled; turn it on with PATCH {"active": true} first', { disabledReason: reg.disabledReason ?? 'manual' });
    }
  }

  return {
    async create(actor: Actor, input: CreateWebhookInput): Promise<WebhookView> {
      checkUrl(input.url);
      checkSecret(input.secret);
      const events = checkEvents(input.events);
      // Counted in the transaction of the insert below, under the owner's lock, so two creates (in one process or two) cannot both take the last place.
      const row = await repository.transaction(async (tx) => {
        if (!actor.admin) {
          await repository.lockQuota(tx, actor.id);
          if ((await repository.ownedCount(actor.id, tx)) >= config.quota) throw quotaExceeded('webhooks', config.quota, 'delete a webhook first');
        }
        const now = isoNow(clock);
        return repository.insertRegistration(
          { id: newId('wh', clock), owner: actor.id, allWorkspaces: actor.admin, url: input.url, events, secret: input.secret, active: true, createdAt: now, updatedAt: now },
          tx,
        );
      });
      deps.log.info('webhook registered', { webhook: row.id, owner: actor.id, host: new URL(row.url).host });
      return webhookView(row);
    },

    async list(actor: Actor): Promise<WebhookView[]> {
      return (await repository.registrations(actor.admin ? null : actor.id)).map(webhookView);
    },

    get: async (actor: Actor, id: string): Promise<WebhookView> => webhookView(await getOwned(actor, id)),

    async update(actor: Actor, id: string, input: PatchWebhookInput): Promise<WebhookView> {
      const reg = await getOwned(actor, id);
      if (input.url !== undefined) checkUrl(input.url);
      if (input.secret !== undefined) checkSecret(input.secret);
      const events = input.events === undefined ? undefined : checkEvents(input.events);
      const now = isoNow(clock);
      const set: Partial<RegistrationRow> = { updatedAt: now };
      if (input.url !== undefined) set.url = input.url;
      if (events !== undefined) set.events = events;
      if (input.secret !== undefined) set.secret = input.secret;
      if (input.active === true && !reg.active) Object.assign(set, { active: true, disabledReason: null, disabledAt: null, failingSince: null });
      if (input.active === false && reg.active) Object.assign(set, { active: false, disabledReason: 'manual', disabledAt: now });
      const row = await repository.transaction((tx) => repository.updateRegistration(reg.id, set, tx));
      if (!row) throw notFound(); // deleted meanwhile
      if (input.active === false && reg.active) await outbox.failPending(reg.id, 'the registration was turned off');
      return webhookView(row);
    },

    async remove(actor: Actor, id: string): Promise<{ id: string; deleted: true }> {
      const reg = await getOwned(actor, id);
      // Deliveries and attempts go with it (foreign keys cascade); an attempt in flight finds nothing to record.
      await repository.transaction((tx) => repository.deleteRegistration(reg.id, tx));
      return { id: reg.id, deleted: true };
    },

    async ping(actor: Actor, id: string): Promise<DeliveryView> {
      const reg = await getOwned(actor, id);
      requireActive(reg);
      const body = JSON.stringify({ event: 'ping', timestamp: isoNow(clock), webhook: { id: reg.id, events: reg.events } });
      return deliveryView(await outbox.enqueueTo(reg, 'ping', body, (tx) => requireRoom(reg, tx)));
    },

    async deliveries(actor: Actor, id: string, q: { status?: DeliveryStatus; limit?: number; before?: string }): Promise<DeliveryView[]> {
      const reg = await getOwned(actor, id);
      let beforeSeq = Number.MAX_SAFE_INTEGER;
      if (q.before !== undefined) {
        const cursor = await repository.deliveryOf(reg.id, q.before);
        if (!cursor) throw invalid('before does not name a delivery of this webhook', '/before');
        beforeSeq = cursor.seq;
      }
      return (await repository.deliveriesPage(reg.id, { beforeSeq, status: q.status, limit: q.limit ?? 50 })).map(deliveryView);
    },

    async delivery(actor: Actor, id: string, deliveryId: string): Promise<DeliveryDetailView> {
      const d = await getDelivery(actor, id, deliveryId);
      const rows = await repository.attemptsOf(d.seq);
      const history = rows.map((a) => ({ attempt: a.attempt, startedAt: a.startedAt, durationMs: a.durationMs, responseStatus: a.responseStatus, error: a.error, responseBody: a.responseBody }));
      return { ...deliveryView(d), payload: JSON.parse(d.payload), history };
    },

    async redeliver(actor: Actor, id: string, deliveryId: string): Promise<DeliveryView> {
      const reg = await getOwned(actor, id);
      requireActive(reg);
      const d = await getDelivery(actor, id, deliveryId);
      // An ended delivery becomes pending again: it needs a place, checked in the transaction that moves it.
      if ((await outbox.redeliver(d.seq, (tx) => requireRoom(reg, tx))) === 'in-flight') {
        throw WorkspaceErrors.DELIVERY_IN_FLIGHT('an attempt of this delivery is in flight; redeliver it once that attempt ends');
      }
      const now = await repository.deliveryBySeq(d.seq);
      if (!now) throw deliveryNotFound(); // its webhook was deleted meanwhile
      return deliveryView(now);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
