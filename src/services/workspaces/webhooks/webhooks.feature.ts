// The webhooks feature assembled from the service's shared dependencies, so the service's index.ts
// wires it in three lines: routes on the app, start after listening, stop before the database closes.
// Events become deliveries from creation on, so a request answered before start() loses none.
import type { ServiceDeps } from '../../../platform/service';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { DeniedAddresses, TargetPolicy } from '../../../platform/net/address-policy';
import { createDeliverer, type Resolver } from './deliver';
import { createOutbox } from './outbox';
import type { WebhooksConfig } from './webhooks.config';
import { webhooksRoutes } from './webhooks.routes';
import { createWebhooksService } from './webhooks.service';

/** `config` comes from loadWebhooksConfig, parsed with the service's other variables at start-up. */
/** `deny`: what the service keeps out of reach beyond the platform's rules (the workspace networks). */
export function createWebhooks(deps: Pick<ServiceDeps, 'db' | 'bus' | 'clock' | 'log'>, config: WebhooksConfig, opts: { resolve?: Resolver; deny?: DeniedAddresses } = {}) {
  const log = deps.log.child({ component: 'webhooks' });
  const policy: TargetPolicy = { denyPrivate: config.denyPrivate, deny: opts.deny };
  const deliverer = createDeliverer({ policy, timeoutMs: config.timeoutMs, resolve: opts.resolve });
  const outbox = createOutbox({ db: deps.db, bus: deps.bus, clock: deps.clock, log, config, deliverer });
  outbox.listen();
  const service = createWebhooksService({ db: deps.db, clock: deps.clock, log, config, outbox, policy });
  return {
    service,
    outbox,
    routes: (auth: WorkspaceAuthPlugin) => webhooksRoutes({ auth, webhooks: service }),
    start: () => outbox.start(),
    stop: () => outbox.stop(),
  };
}
