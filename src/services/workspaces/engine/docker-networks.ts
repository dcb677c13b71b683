// The network calls of the Docker engine (engine/engine.ts documents each): a user-defined bridge per
// workspace. Kept apart from docker.ts only for size; it takes docker.ts's dockerode client.
import type { DockerClient } from './docker';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_WORKSPACE, type Engine, type ManagedObject, type NetworkInfo } from './engine';
import { call, callOr } from './docker-calls';

type NetworkCalls = Pick<Engine, 'createNetwork' | 'inspectNetwork' | 'removeNetwork' | 'listManagedNetworks' | 'networkSubnets'>;

interface RawNetwork {
  Id: string;
  Name: string;
  Labels?: Record<string, string> | null;
  Options?: Record<string, string> | null;
  IPAM?: { Config?: { Subnet?: string; Gateway?: string }[] | null } | null;
}

function info(n: RawNetwork): NetworkInfo {
  const v4 = (n.IPAM?.Config ?? []).find((c) => c.Subnet && !c.Subnet.includes(':'));
  return {
    id: n.Id,
    name: n.Name,
    bridge: n.Options?.['com.docker.network.bridge.name'] || `br-${n.Id.slice(0, 12)}`,
    subnet: v4?.Subnet ?? '',
    gateway: v4?.Gateway ?? '',
    workspaceId: n.Labels?.[LABEL_WORKSPACE] ?? '',
  };
}

export function networkCalls(docker: DockerClient): NetworkCalls {
  const inspectNetwork = (name: string) => callOr(404, null, () => docker.getNetwork(name).inspect() as Promise<RawNetwork>).then((n) => (n ? info(n) : null));
  return {
    async createNetwork(spec) {
      await call(() =>
        docker.createNetwork({
          Name: spec.name,
          Driver: 'bridge',
          CheckDuplicate: true,
          Labels: spec.labels,
          IPAM: { Driver: 'default', Config: [{ Subnet: spec.subnet, Gateway: spec.gateway }] },
          // One container per network: no container-to-container traffic to allow even within it.
          Options: { 'com.docker.network.bridge.enable_icc': 'false' },
        }),
      );
      const made = await inspectNetwork(spec.name);
      if (!made) throw new Error(`network ${spec.name} vanished right after it was created`);
      return made;
    },

    inspectNetwork,

    async removeNetwork(name) {
      await callOr(404, undefined, () => docker.getNetwork(name).remove());
    },

    async listManagedNetworks(instance) {
      const list = (await call(() => docker.listNetworks({ filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`] } }))) as RawNetwork[];
      return list.map((n): ManagedObject => ({ id: n.Name, workspaceId: n.Labels?.[LABEL_WORKSPACE] ?? '' }));
    },

    async networkSubnets() {
      const list = (await call(() => docker.listNetworks())) as RawNetwork[];
      return list.flatMap((n) => (n.IPAM?.Config ?? []).map((c) => c.Subnet ?? '').filter((s) => s && !s.includes(':')));
    },
  };
}
