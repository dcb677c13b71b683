// Live figures of a running workspace for GET: CPU from two samples of the engine's counters, memory
// from one, disk from `du` inside the container (cached, since it walks the whole volume).
import { errorFields, type Clock, type Logger } from '../../../platform/runtime';
import type { Engine } from '../engine/engine';
import { templates } from '../images/templates';
import type { WorkspaceRow } from '../workspaces.tables';

export const MiB = 1024 * 1024;
/** Where the workspace volume is mounted in every container. */
export const MOUNT_PATH = '/workspace';
const DISK_TTL_MS = 30_000;
/** The gap between the two CPU samples of a container seen for the first time. */
const FIRST_SAMPLE_GAP_MS = 200;

function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1).replace(/\.0$/, '')}${units[i]}`;
}

interface WorkspaceStats {
  cpu: string;
  memory: string;
  disk: string;
}

export function createStats(deps: { engine: Engine; clock: Clock; log: Logger }) {
  const { engine, clock } = deps;
  const cpuSamples = new Map<string, { cpuTotal: number; systemTotal: number }>();
  /** Last disk figure per workspace: `du` runs at most every DISK_TTL_MS. */
  const diskSeen = new Map<string, { text: string; at: number }>();

  async function diskUsage(id: string, cid: string): Promise<string> {
    const seen = diskSeen.get(id);
    if (seen && clock.now() - seen.at < DISK_TTL_MS) return seen.text;
    const r = await engine.execCollect(cid, ['/bin/sh', '-c', `timeout 3 du -sk ${MOUNT_PATH} 2>/dev/null | cut -f1; df -kP ${MOUNT_PATH} | tail -n 1`]);
    const [usedLine, dfLine] = r.stdout.trim().split('\n');
    const used = Number(usedLine);
    const total = Number(dfLine?.trim().split(/\s+/)[1]);
    if (!Number.isFinite(used) || !Number.isFinite(total) || !usedLine) return seen?.text ?? 'unknown';
    const text = `${formatBytes(used * 1024)} / ${formatBytes(total * 1024)}`;
    diskSeen.set(id, { text, at: clock.now() });
    return text;
  }

  return {
    /** Live figures of a running workspace; zeros (and the last disk figure seen) otherwise. */
    async of(row: WorkspaceRow): Promise<WorkspaceStats> {
      const limit = (templates.get(row.template)?.resources.memoryMb ?? 0) * MiB;
      const idle = { cpu: '0.00%', memory: `0B / ${formatBytes(limit)}`, disk: diskSeen.get(row.id)?.text ?? 'unknown' };
      if (row.status !== 'running' || !row.containerId) return idle;
      const cid = row.containerId;
      try {
        let prev = cpuSamples.get(cid);
        let s = await engine.stats(cid);
        if (!prev) {
          // No earlier sample: take a second one shortly after, rather than the engine's 1 s+ two-sample wait.
          prev = s;
          await Bun.sleep(FIRST_SAMPLE_GAP_MS);
          s = await engine.stats(cid);
        }
        cpuSamples.set(cid, { cpuTotal: s.cpuTotal, systemTotal: s.systemTotal });
        const sys = s.systemTotal - prev.systemTotal;
        const cpu = sys > 0 ? ((s.cpuTotal - prev.cpuTotal) / sys) * s.onlineCpus * 100 : 0;
        const memory = `${formatBytes(s.memoryUsed)} / ${formatBytes(s.memoryLimit || limit)}`;
        return { cpu: `${Math.max(0, cpu).toFixed(2)}%`, memory, disk: await diskUsage(row.id, cid) };
      } catch (e) {
        deps.log.warn('stats failed', { workspace: row.id, ...errorFields(e) });
        return idle;
      }
    },

    /** Drops the samples of a container that stopped (its counters restart) or a workspace that is gone. */
    forget(row: WorkspaceRow, opts: { disk: boolean }) {
      if (row.containerId) cpuSamples.delete(row.containerId);
      if (opts.disk) diskSeen.delete(row.id);
    },
  };
}

export type Stats = ReturnType<typeof createStats>;
