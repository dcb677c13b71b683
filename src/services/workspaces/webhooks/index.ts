// The webhooks feature: signed, ordered, retried deliveries of workspace events (/api/webhooks...):
// the rules (webhooks.service.ts) and the outbox (intake from the bus, the dispatcher).
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { TargetPolicy } from '../../../platform/net/address-policy';
import type { Store } from '../../../platform/store';
import type { Clock, Logger } from '../../../platform/runtime';
import { createDeliverer } from './deliver';
import { createOutbox } from './outbox';
import type { WebhooksConfig } from './webhooks.config';
import { createWebhooksRepository } from './webhooks.repository';
import { webhooksRoutes } from './webhooks.routes';
import { createWebhooksService, type WebhooksService } from './webhooks.service';
import * as models from './webhooks.model';

export function createWebhooksFeature(deps: { store: Store; clock: Clock; log: Logger; config: WebhooksConfig; policy: TargetPolicy; auth: WorkspaceAuthPlugin }): Feature<WebhooksService> {
  const repository = createWebhooksRepository(deps.store);
  const outbox = createOutbox({
    store: deps.store,
    repository,
    clock: deps.clock,
    log: deps.log,
    config: deps.config,
    deliverer: createDeliverer({ policy: deps.policy, timeoutMs: deps.config.timeoutMs }),
  });
  const webhooks = createWebhooksService({ repository, clock: deps.clock, log: deps.log, config: deps.config, outbox, policy: deps.policy });
  return {
    service: webhooks,
    routes: webhooksRoutes({ auth: deps.auth, webhooks }),
    models: [models],
    listen(bus) {
      outbox.listen(bus);
      return () => {}; // outbox.stop() unsubscribes, after the lifecycle's last events
    },
    // Deliveries a previous run left pending go out again.
    start: () => outbox.start(),
    stop: () => outbox.stop(),
  };
}
