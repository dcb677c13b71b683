// HTTP wiring of webhooks: routes, schemas and status codes only; the rules live in webhooks.service.ts.
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { WebhooksService } from './webhooks.service';
import { workspaceOperation as op } from '../workspaces.errors';
import {
  CreateWebhookBody,
  DeleteWebhookResult,
  Delivery,
  DeliveryDetail,
  DeliveryList,
  DeliveryParams,
  DeliveryQuery,
  PatchWebhookBody,
  Webhook,
  WebhookList,
  WebhookParams,
  WEBHOOK_EVENTS,
} from './webhooks.model';

const SIGNING =
  'Each delivery is a POST of the JSON payload `{event, timestamp, workspace: {id, name, status, reason?}}` with `X-Webhook-Event`, ' +
  '`X-Webhook-Delivery` (a unique delivery id, the same on every attempt), `X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the body>` and the ' +
  'Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`. A 2xx acknowledges it; anything else is ' +
  'retried on APP_WEBHOOK_RETRY_SCHEDULE; 410 disables the webhook; Retry-After on 429/503 delays the next attempt. Deliveries of one ' +
  'workspace arrive in order. See docs/webhooks.md.';

export function webhooksRoutes(deps: { auth: WorkspaceAuthPlugin; webhooks: WebhooksService }) {
  const wh = deps.webhooks;
  return new Elysia({ name: 'workspaces.webhooks', detail: { tags: ['webhooks'] } })
    .use(deps.auth)
    .post(
      '/api/webhooks',
      async ({ actor, body, set }) => {
        const view = await wh.create(actor, body);
        set.status = 201;
        set.headers.location = `/api/webhooks/${view.id}`;
        return view;
      },
      {
        body: CreateWebhookBody,
        response: { 201: Webhook },
        detail: { ...op('createWebhook', ['QUOTA_EXCEEDED']),
          summary: 'Register a webhook for workspace events',
          description:
            `Answers 201 with the registration (never the secret). Events: ${WEBHOOK_EVENTS.join(', ')}, or "*". A registration receives the ` +
            "events of its owner's workspaces (created with an admin token: every workspace's). 400 `INVALID_REQUEST` for an unknown event name, a " +
            'URL that is not http(s), an IP literal in a link-local or metadata range, inside APP_WORKSPACE_SUBNET_POOL or of a workspace container ' +
            '(any spelling; with APP_WEBHOOK_DENY_PRIVATE=true also loopback and private), or a malformed whsec_ secret; 429 `QUOTA_EXCEEDED` ' +
            '(`details: {quota: "webhooks", limit}`) past APP_QUOTA_WEBHOOKS registrations of the caller (20; admin tokens are exempt). ' +
            SIGNING,
        },
      },
    )
    .get('/api/webhooks', async ({ actor }) => ({ webhooks: await wh.list(actor) }), {
      response: { 200: WebhookList },
      detail: { ...op('listWebhooks'), summary: 'List your webhooks (admins: all), oldest first, with their active state' },
    })
    .get('/api/webhooks/:id', ({ actor, params }) => wh.get(actor, params.id), {
      params: WebhookParams,
      response: { 200: Webhook },
      detail: { ...op('getWebhook', ['WEBHOOK_NOT_FOUND']), summary: 'A webhook and its state', description: "404 `WEBHOOK_NOT_FOUND` when absent or another actor's." },
    })
    .patch('/api/webhooks/:id', ({ actor, params, body }) => wh.update(actor, params.id, body), {
      params: WebhookParams,
      body: PatchWebhookBody,
      response: { 200: Webhook },
      detail: { ...op('updateWebhook', ['WEBHOOK_NOT_FOUND']),
        summary: 'Change a webhook: url, events, secret, active',
        description:
          'Only the fields given change, with the checks of create. `active: false` turns the webhook off (its pending deliveries end as failed); ' +
          '`active: true` turns a disabled webhook (off, gone or failing) back on. The new secret signs every attempt from now on.',
      },
    })
    .delete('/api/webhooks/:id', ({ actor, params }) => wh.remove(actor, params.id), {
      params: WebhookParams,
      response: { 200: DeleteWebhookResult },
      detail: { ...op('deleteWebhook', ['WEBHOOK_NOT_FOUND']), summary: 'Delete a webhook with its delivery log' },
    })
    .post(
      '/api/webhooks/:id/ping',
      async ({ actor, params, set }) => {
        set.status = 202;
        return await wh.ping(actor, params.id);
      },
      {
        params: WebhookParams,
        response: { 202: Delivery },
        detail: { ...op('pingWebhook', ['WEBHOOK_NOT_FOUND', 'WEBHOOK_INACTIVE', 'QUOTA_EXCEEDED']),
          summary: 'Send a ping event to the webhook',
          description:
            'Answers 202 with the queued delivery; the body sent is `{event: "ping", timestamp, webhook: {id, events}}`, signed like every delivery. ' +
            '409 `WEBHOOK_INACTIVE` when the webhook is disabled; 429 `QUOTA_EXCEEDED` (`details: {quota: "pendingDeliveries", limit}`) while ' +
            'the webhook has APP_WEBHOOK_MAX_PENDING (1000) deliveries pending.',
        },
      },
    )
    .get('/api/webhooks/:id/deliveries', async ({ actor, params, query }) => ({ deliveries: await wh.deliveries(actor, params.id, query) }), {
      params: WebhookParams,
      query: DeliveryQuery,
      response: { 200: DeliveryList },
      detail: { ...op('listWebhookDeliveries', ['WEBHOOK_NOT_FOUND']),
        summary: 'The delivery log of a webhook, newest first',
        description: 'Each delivery with its status, attempts, the last answer (status, error, duration) and its times. Page with `before` and `limit` (default 50).',
      },
    })
    .get('/api/webhooks/:id/deliveries/:deliveryId', ({ actor, params }) => wh.delivery(actor, params.id, params.deliveryId), {
      params: DeliveryParams,
      response: { 200: DeliveryDetail },
      detail: { ...op('getWebhookDelivery', ['WEBHOOK_NOT_FOUND', 'DELIVERY_NOT_FOUND']), summary: 'One delivery with its payload and every attempt', description: '404 `DELIVERY_NOT_FOUND` when the webhook has no such delivery.' },
    })
    .post(
      '/api/webhooks/:id/deliveries/:deliveryId/redeliver',
      async ({ actor, params, set }) => {
        set.status = 202;
        return await wh.redeliver(actor, params.id, params.deliveryId);
      },
      {
        params: DeliveryParams,
        response: { 202: Delivery },
        detail: { ...op('redeliverWebhookDelivery', ['WEBHOOK_NOT_FOUND', 'DELIVERY_NOT_FOUND', 'WEBHOOK_INACTIVE', 'DELIVERY_IN_FLIGHT', 'QUOTA_EXCEEDED']),
          summary: 'Send a delivery again, with the same delivery id',
          description:
            'Answers 202; the delivery becomes pending and is sent at once with the same body and id (fresh timestamp and signatures), ' +
            'then retried on the schedule. A redelivery does not wait for, or hold back, other deliveries of its workspace. ' +
            '409 `WEBHOOK_INACTIVE` when the webhook is disabled, 409 `DELIVERY_IN_FLIGHT` while an attempt is being made; 429 `QUOTA_EXCEEDED` ' +
            '(`quota: "pendingDeliveries"`) for an ended delivery while the webhook has APP_WEBHOOK_MAX_PENDING deliveries pending.',
        },
      },
    );
}
