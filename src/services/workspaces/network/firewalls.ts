// One firewall per engine (APP_ENGINES): the rules of a workspace's bridge go into the iptables of
// the host (or network namespace, `netns=`) its engine runs in, under that engine's own mode, as one
// Firewall for the callers that do not care which engine (provisioning, reconciliation).
import { createFirewall, type Firewall } from './firewall';
import type { Logger } from '../../../platform/runtime';
import type { Engines } from '../engine/engines';
import type { WorkspacesConfig } from '../workspaces.config';

export function createFirewalls(deps: { instance: string; settings: WorkspacesConfig; engines: Engines; engineOfWorkspace: (id: string) => Promise<string | null | undefined>; log: Logger }) {
  const byEngine = new Map<string, Firewall>(
    deps.settings.engines.map((e) => [
      e.name,
      // The rule against other workspace networks covers the whole pool: every engine's share of it.
      createFirewall({ instance: deps.instance, log: deps.log, mode: e.firewall, dockerHost: e.host, pool: deps.settings.subnetPool, netns: e.netns }),
    ]),
  );
  const of = (recorded: string | null | undefined): Firewall => byEngine.get(deps.engines.nameOf(recorded)) ?? byEngine.values().next().value!;
  const all = () => [...byEngine.values()];

  const firewall: Firewall = {
    status: () => of(undefined).status(),
    protect: async (net) => of(await deps.engineOfWorkspace(net.workspaceId)).protect(net),
    // A deleted workspace's row is gone: its rules are looked for everywhere (each engine's chains are small).
    release: async (workspaceId) => {
      await Promise.all(all().map((f) => f.release(workspaceId)));
    },
    tagged: async () => new Set((await Promise.all(all().map((f) => f.tagged()))).flatMap((s) => [...s])),
  };
  return { ...firewall, of };
}

export type Firewalls = ReturnType<typeof createFirewalls>;
