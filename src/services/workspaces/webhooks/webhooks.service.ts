// Webhook rules: registrations owned by their creator (another actor's is 404), validation of
// targets and event names, the delivery log, ping and redelivery. Sending is outbox.ts's job.
import { and, asc, desc, eq, lt, sql } from 'drizzle-orm';
import { AppError } from '../../../platform/errors';
import '../workspaces.errors';
import type { Db } from '../../../platform/db';
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
import { attempts, deliveries, registrations, type DeliveryRow, type DeliveryStatus, type RegistrationRow } from './webhooks.tables';

export interface WebhooksServiceDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  config: WebhooksConfig;
  outbox: Outbox;
  /** Where targets may point (the platform's rules plus what the service denies). */
  policy: TargetPolicy;
}

const notFound = () => new AppError('WEBHOOK_NOT_FOUND', 'webhook not found');
const deliveryNotFound = () => new AppError('DELIVERY_NOT_FOUND', 'delivery not found');
const invalid = (message: string, property: string) => new AppError('INVALID_REQUEST', message, { property });
/** The workspace API's quota answer (quotas.ts has the same shape); `quota` names what is full. */
const quotaExceeded = (quota: 'webhooks' | 'pendingDeliveries', limit: number, message: string) =>
  new AppError('QUOTA_EXCEEDED', `quota exceeded: ${quota} (limit ${limit}); ${message}`, { quota, limit });

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
      throw new AppError('INVALID_REQUEST', `events/${i} is not a known event name`, { property: `/events/${i}`, known: [...WEBHOOK_EVENTS, '*'] });
    }
  }
  return events.includes('*') ? ['*'] : [...new Set(events)];
}

export function createWebhooksService(deps: WebhooksServiceDeps) {
  const { db, clock, config, outbox } = deps;

  function checkUrl(url: string) {
    const refusal = urlRefusal(url, deps.policy);
    if (refusal) throw invalid(refusal, '/url');
  }

  function checkSecret(secret: string) {
    const problem = whsecProblem(secret);
    if (problem) throw invalid(problem, '/secret');
  }

  function getOwned(actor: Actor, id: string): RegistrationRow {
    const row = db.select().from(registrations).where(eq(registrations.id, id)).get();
    if (!row || !canAccess(actor, row.owner)) throw notFound();
    return row;
  }

  function getDelivery(actor: Actor, id: string, deliveryId: string): DeliveryRow {
    const reg = getOwned(actor, id);
    const d = db
      .select()
      .from(deliveries)
      .where(and(eq(deliveries.id, deliveryId), eq(deliveries.registrationId, reg.id)))
      .get();
    if (!d) throw deliveryNotFound();
    return d;
  }

  /**
   * Pings and redeliveries are what one caller can multiply at will: past APP_WEBHOOK_MAX_PENDING
   * pending deliveries they are refused. Workspace events are never refused (they are what was said).
   */
  function requireRoom(reg: RegistrationRow) {
    if (outbox.pendingOf(reg.id) >= config.maxPending) {
      throw quotaExceeded('pendingDeliveries', config.maxPending, 'wait until the receiver has taken some');
    }
  }

  function requireActive(reg: RegistrationRow) {
    if (!reg.active) {
      throw new AppError('WEBHOOK_INACTIVE', 'the webhook is disabled; turn it on with PATCH {"active": true} first', { disabledReason: reg.disabledReason ?? 'manual' });
    }
  }

  return {
    create(actor: Actor, input: CreateWebhookInput): WebhookView {
      checkUrl(input.url);
      checkSecret(input.secret);
      const events = checkEvents(input.events);
      // Counted in the same synchronous step as the insert below, so two creates cannot both take the last place.
      const owned = actor.admin ? 0 : (db.select({ n: sql<number>`count(*)` }).from(registrations).where(eq(registrations.owner, actor.id)).get()?.n ?? 0);
      if (!actor.admin && owned >= config.quota) throw quotaExceeded('webhooks', config.quota, 'delete a webhook first');
      const now = isoNow(clock);
      const row = db
        .insert(registrations)
        .values({ id: newId('wh', clock), owner: actor.id, allWorkspaces: actor.admin, url: input.url, events, secret: input.secret, active: true, createdAt: now, updatedAt: now })
        .returning()
        .get();
      deps.log.info('webhook registered', { webhook: row.id, owner: actor.id, host: new URL(row.url).host });
      return webhookView(row);
    },

    list(actor: Actor): WebhookView[] {
      const q = db.select().from(registrations);
      const rows = (actor.admin ? q : q.where(eq(registrations.owner, actor.id))).orderBy(asc(registrations.createdAt), asc(registrations.id)).all();
      return rows.map(webhookView);
    },

    get: (actor: Actor, id: string): WebhookView => webhookView(getOwned(actor, id)),

    update(actor: Actor, id: string, input: PatchWebhookInput): WebhookView {
      const reg = getOwned(actor, id);
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
      const row = db.update(registrations).set(set).where(eq(registrations.id, reg.id)).returning().get()!;
      if (input.active === false && reg.active) outbox.failPending(reg.id, 'the registration was turned off');
      return webhookView(row);
    },

    remove(actor: Actor, id: string): { id: string; deleted: true } {
      const reg = getOwned(actor, id);
      // Deliveries and attempts go with it (foreign keys cascade); an attempt in flight finds nothing to record.
      db.delete(registrations).where(eq(registrations.id, reg.id)).run();
      return { id: reg.id, deleted: true };
    },

    ping(actor: Actor, id: string): DeliveryView {
      const reg = getOwned(actor, id);
      requireActive(reg);
      requireRoom(reg);
      const body = JSON.stringify({ event: 'ping', timestamp: isoNow(clock), webhook: { id: reg.id, events: reg.events } });
      return deliveryView(outbox.enqueueTo(reg, 'ping', body));
    },

    deliveries(actor: Actor, id: string, q: { status?: DeliveryStatus; limit?: number; before?: string }): DeliveryView[] {
      const reg = getOwned(actor, id);
      let beforeSeq = Number.MAX_SAFE_INTEGER;
      if (q.before !== undefined) {
        const cursor = db.select({ seq: deliveries.seq }).from(deliveries).where(and(eq(deliveries.id, q.before), eq(deliveries.registrationId, reg.id))).get();
        if (!cursor) throw invalid('before does not name a delivery of this webhook', '/before');
        beforeSeq = cursor.seq;
      }
      return db
        .select()
        .from(deliveries)
        .where(and(eq(deliveries.registrationId, reg.id), lt(deliveries.seq, beforeSeq), q.status ? eq(deliveries.status, q.status) : undefined))
        .orderBy(desc(deliveries.seq))
        .limit(q.limit ?? 50)
        .all()
        .map(deliveryView);
    },

    delivery(actor: Actor, id: string, deliveryId: string): DeliveryDetailView {
      const d = getDelivery(actor, id, deliveryId);
      const history = db
        .select()
        .from(attempts)
        .where(eq(attempts.deliverySeq, d.seq))
        .orderBy(asc(attempts.id))
        .all()
        .map((a) => ({ attempt: a.attempt, startedAt: a.startedAt, durationMs: a.durationMs, responseStatus: a.responseStatus, error: a.error, responseBody: a.responseBody }));
      return { ...deliveryView(d), payload: JSON.parse(d.payload), history };
    },

    redeliver(actor: Actor, id: string, deliveryId: string): DeliveryView {
      const reg = getOwned(actor, id);
      requireActive(reg);
      const d = getDelivery(actor, id, deliveryId);
      if (d.status !== 'pending') requireRoom(reg);
      if (outbox.redeliver(d.seq) === 'in-flight') {
        throw new AppError('DELIVERY_IN_FLIGHT', 'an attempt of this delivery is in flight; redeliver it once that attempt ends');
      }
      return deliveryView(db.select().from(deliveries).where(eq(deliveries.seq, d.seq)).get()!);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
