// The outbox: every webhook delivery is a row written the moment its event is received and kept until
// it is delivered or failed for good. Its intake (intake.ts) writes the rows, its dispatcher
// (dispatcher.ts) sends them; this wires the two (the intake tells the dispatcher what it wrote, the
// dispatcher tells the intake which webhook it disabled) and answers as one object.
import type { Bus } from '../../../platform/bus/bus';
import type { Store } from '../../../platform/store';
import type { Clock, Logger } from '../../../platform/runtime';
import type { Deliverer } from './deliver';
import { createDispatcher } from './dispatcher';
import { createIntake } from './intake';
import type { WebhooksConfig } from './webhooks.config';
import type { WebhooksRepository } from './webhooks.repository';

export interface OutboxDeps {
  store: Store;
  repository: WebhooksRepository;
  clock: Clock;
  log: Logger;
  config: WebhooksConfig;
  deliverer: Deliverer;
  /** Source of jitter, in [0, 1). */
  random?: () => number;
}

export function createOutbox(deps: OutboxDeps) {
  const random = deps.random ?? Math.random;
  const intake = createIntake({ ...deps, random, written: () => dispatcher.wake() });
  const dispatcher = createDispatcher({ ...deps, random, intake });
  return {
    enqueueEvent: intake.enqueueEvent,
    enqueueTo: intake.enqueueTo,
    pendingOf: intake.pendingOf,
    redeliver: intake.redeliver,
    failPending: intake.failPending,
    /** Workspace events from the bus become deliveries (called by start() before its first await). */
    listen: (bus: Bus) => intake.listen(bus),
    /** Resumes what a previous run left, then sends. */
    start: dispatcher.start,
    /** Stops taking events, then stops the dispatcher (attempts in flight are waited for, briefly). */
    async stop() {
      intake.unlisten();
      await dispatcher.stop();
    },
    /** For tests and the benchmark: attempts in flight. */
    inFlight: dispatcher.inFlight,
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
