// What clones and webhooks of this service may never reach beyond the platform's own rules
// (CONTRACT.md, "One tenant never stalls another"): the workspace subnet pool, every address of a
// Keel-managed container on the engine (another Keel's pool included), and Keel's own service ports
// on this host. The platform's address
// policy stays service-agnostic: this module hands it the ranges and a list of addresses it reads
// at every check, refreshed from the engine in the background (a name is judged when its
// connection is made, so a list a few seconds old only matters for a container born meanwhile,
// and that one sits in the pool anyway).
import type { DeniedAddresses, TargetPolicy } from '../../platform/net/address-policy';
import { errorFields, type Logger } from '../../platform/runtime';
import type { Engine } from './engine/engine';

/** How often the list of container addresses is read again from the engine. */
const REFRESH_MS = 5_000;

export function createTargetGuard(deps: { engine: Engine; subnetPool: string; log: Logger; ownPorts: () => number[] }) {
  let known: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let warned = false;

  async function refresh() {
    try {
      known = await deps.engine.managedAddresses();
      warned = false;
    } catch (e) {
      // Keep the last list: an engine that does not answer runs no new containers either.
      if (!warned) deps.log.warn('container addresses for the target policy not refreshed', errorFields(e));
      warned = true;
    }
  }

  const deny: DeniedAddresses = { cidrs: [deps.subnetPool], addresses: () => known, hostPorts: deps.ownPorts };

  return {
    deny,
    /** The policy for a feature's targets: its own denyPrivate, plus what this service keeps out of reach. */
    policy: (denyPrivate: boolean): TargetPolicy => ({ denyPrivate, deny }),
    refresh,
    start() {
      stopped = false;
      const loop = async () => {
        await refresh();
        if (!stopped) timer = setTimeout(loop, REFRESH_MS);
      };
      void loop();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export type TargetGuard = ReturnType<typeof createTargetGuard>;
