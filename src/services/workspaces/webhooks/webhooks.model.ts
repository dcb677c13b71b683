// The webhook API's request and response schemas: the single source of validation, types and OpenAPI.
import { t, type Static } from 'elysia';

/** Events a registration may subscribe to (CONTRACT.md), plus `webhook.disabled` about its owner's other registrations. */
export const WEBHOOK_EVENTS = [
  'workspace.created',
  'workspace.started',
  'workspace.stopped',
  'workspace.restarted',
  'workspace.deleted',
  'workspace.failed',
  'workspace.paused',
  'workspace.resumed',
  'webhook.disabled',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A registration may hold at most this many event names. */
export const MAX_EVENTS = WEBHOOK_EVENTS.length + 1;

const EVENTS_DESCRIPTION = `event names: ${WEBHOOK_EVENTS.join(', ')}; or "*" for all (also those added later). An unknown name answers 400.`;

const Url = t.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'http:// or https:// URL the events are POSTed to. Link-local and cloud-metadata addresses are refused (IP literals in any spelling ' +
    'here, names when resolved at delivery); with APP_WEBHOOK_DENY_PRIVATE=true loopback and private addresses too. Redirects are not followed.',
});
const Events = t.Array(t.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: MAX_EVENTS, description: EVENTS_DESCRIPTION });
const Secret = t.String({
  minLength: 16,
  maxLength: 512,
  description:
    'shared secret of both signatures (16 to 512 characters); a secret written `whsec_<base64>` keys the Standard Webhooks signature with the ' +
    'decoded bytes. Stored, never returned or logged.',
});

export const CreateWebhookBody = t.Object({ url: Url, events: Events, secret: Secret }, { description: 'unknown fields are ignored' });
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const PatchWebhookBody = t.Object(
  {
    url: t.Optional(Url),
    events: t.Optional(Events),
    secret: t.Optional(Secret),
    active: t.Optional(t.Boolean({ description: 'false stops deliveries (pending ones end as failed); true turns a disabled registration back on' })),
  },
  { description: 'only the fields given change; unknown fields are ignored' },
);
export type PatchWebhookInput = Static<typeof PatchWebhookBody>;

export const DisabledReasonSchema = t.Union([t.Literal('manual'), t.Literal('gone'), t.Literal('failing')], {
  description: 'manual: turned off with PATCH active=false; gone: the receiver answered 410; failing: deliveries failed for APP_WEBHOOK_DISABLE_AFTER',
});

export const Webhook = t.Object({
  id: t.String(),
  url: t.String(),
  events: t.Array(t.String()),
  active: t.Boolean({ description: 'false: no deliveries are made; see disabledReason' }),
  disabledReason: t.Nullable(DisabledReasonSchema),
  disabledAt: t.Nullable(t.String({ format: 'date-time' })),
  failingSince: t.Nullable(t.String({ format: 'date-time', description: 'first failed attempt since the last success; null while healthy' })),
  allWorkspaces: t.Boolean({ description: "true when created with an admin token: every workspace's events, not only the owner's" }),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
});
export type WebhookView = Static<typeof Webhook>;

export const WebhookList = t.Object({ webhooks: t.Array(Webhook) });

export const DeliveryStatusSchema = t.Union([t.Literal('pending'), t.Literal('delivered'), t.Literal('failed')]);

export const Delivery = t.Object({
  id: t.String({ description: 'the delivery id: X-Webhook-Delivery and webhook-id, the same on every attempt' }),
  event: t.String(),
  status: DeliveryStatusSchema,
  attempts: t.Integer({ description: 'attempts made so far' }),
  responseStatus: t.Nullable(t.Integer({ description: 'HTTP status of the last attempt; null when no answer came' })),
  error: t.Nullable(t.String({ description: 'why the last attempt failed (HTTP status, timeout, refused address, ...)' })),
  durationMs: t.Nullable(t.Integer({ description: 'time of the last attempt, request to answer, in milliseconds' })),
  createdAt: t.String({ format: 'date-time', description: 'when the event was received' }),
  lastAttemptAt: t.Nullable(t.String({ format: 'date-time' })),
  nextAttemptAt: t.Nullable(t.String({ format: 'date-time', description: 'when the next attempt is due (pending only)' })),
  deliveredAt: t.Nullable(t.String({ format: 'date-time' })),
});
export type DeliveryView = Static<typeof Delivery>;

export const DeliveryList = t.Object({ deliveries: t.Array(Delivery, { description: 'newest first' }) });

export const Attempt = t.Object({
  attempt: t.Integer({ description: '1 for the first' }),
  startedAt: t.String({ format: 'date-time' }),
  durationMs: t.Integer(),
  responseStatus: t.Nullable(t.Integer()),
  error: t.Nullable(t.String()),
  responseBody: t.Nullable(t.String({ description: 'the first 1 KiB of the answer' })),
});

export const DeliveryDetail = t.Object({
  ...Delivery.properties,
  payload: t.Unknown({ description: 'the JSON body sent on every attempt' }),
  history: t.Array(Attempt, { description: 'every attempt, oldest first' }),
});
export type DeliveryDetailView = Static<typeof DeliveryDetail>;

export const WebhookParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) });
export const DeliveryParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }), deliveryId: t.String({ minLength: 1, maxLength: 64 }) });

export const DeliveryQuery = t.Object({
  status: t.Optional(DeliveryStatusSchema),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, default: 50, title: 'limit' })),
  before: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'a delivery id: only older deliveries (the next page)' })),
});

export const DeleteWebhookResult = t.Object({ id: t.String(), deleted: t.Literal(true) });
