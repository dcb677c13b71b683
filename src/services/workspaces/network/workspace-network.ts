// Each workspace's own network: a user-defined bridge named keel-<workspace id>, labelled like its
// container and volume, with a /28 from its engine's share of APP_WORKSPACE_SUBNET_POOL, and Keel's
// firewall rules on its bridge (network/firewall.ts). Made before the container, removed after it (docs/security.md).
import { EngineError, type Engine, type NetworkInfo } from '../engine/engine';
import type { Firewall } from './firewall';
import { parseCidr, subnetCandidates } from './subnets';
import type { Engines } from '../engine/engines';
import type { WorkspaceRow } from '../workspaces.tables';

export const networkName = (workspaceId: string) => `keel-${workspaceId}`;

export function createWorkspaceNetworks(deps: { engine: Engine; engines: Engines; firewall: Firewall }) {
  const { engine, firewall } = deps;

  /** Makes the network on a free subnet; another Keel taking the same subnet meanwhile moves it to the next one. */
  async function make(row: WorkspaceRow, labels: Record<string, string>): Promise<NetworkInfo> {
    const name = networkName(row.id);
    // Its engine's own share of the pool: engines sharing a host never hand out overlapping subnets.
    const pool = deps.engines.settingsOf(row.engine).pool;
    const candidates = subnetCandidates(parseCidr(pool)!, await deps.engines.at(row.engine).networkSubnets(), row.id);
    for (const c of candidates) {
      try {
        return await engine.createNetwork({ name, labels, ...c });
      } catch (e) {
        if (e instanceof EngineError && e.kind === 'conflict') {
          const made = await engine.inspectNetwork(name);
          if (made) return made;
        }
        if (e instanceof EngineError && /overlap/i.test(e.message)) continue;
        throw e;
      }
    }
    const share = deps.engines.names.length > 1 ? `, engine ${deps.engines.nameOf(row.engine)}'s share` : '';
    throw new EngineError(`no free /28 left in APP_WORKSPACE_SUBNET_POOL (${pool}${share}) for the workspace's network`, 'refused');
  }

  return {
    /** The workspace's network, made if absent (idempotent); its rules are protect()'s. */
    async ensure(row: WorkspaceRow, labels: Record<string, string>): Promise<NetworkInfo> {
      return (await engine.inspectNetwork(networkName(row.id))) ?? (await make(row, labels));
    },

    /** The network's firewall rules, in place (idempotent): before any container on it starts. */
    protect(workspaceId: string, net: NetworkInfo): Promise<void> {
      return firewall.protect({ workspaceId, bridge: net.bridge, subnet: net.subnet });
    },

    /** Removes the network (its container must be gone) and its rules. */
    async remove(workspaceId: string): Promise<void> {
      await engine.removeNetwork(networkName(workspaceId));
      await firewall.release(workspaceId);
    },
  };
}

export type WorkspaceNetworks = ReturnType<typeof createWorkspaceNetworks>;
