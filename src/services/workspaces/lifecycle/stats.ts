// Live figures of running workspaces, sampled in the background so GET /api/workspaces/{id} only
// reads the last sample: CPU from two readings of the engine's counters, memory from one, disk from
// `du` inside the container at most every DISK_EVERY_MS (it walks the whole volume). One loop samples
// every running workspace each SAMPLE_EVERY_MS, at most SAMPLE_CONCURRENCY at a time.
import { errorFields, type Clock, type Logger } from '../../../platform/runtime';
import type { Engine } from '../engine/engine';
import type { TemplateRegistry } from '../images/templates';
import type { WorkspaceRow } from '../workspaces.tables';

export const MiB = 1024 * 1024;
/** Where the workspace volume is mounted in every container. */
export const MOUNT_PATH = '/workspace';
/** How old CPU and memory figures may be (docs/workspaces.md, "Stats"). */
export const SAMPLE_EVERY_MS = 5_000;
/** How old the disk figure may be. */
const DISK_EVERY_MS = 30_000;
/** Engine calls of one round in flight at once: a thousand workspaces never mean a thousand calls at a time. */
const SAMPLE_CONCURRENCY = 4;
/** The gap between the two CPU readings of a container seen for the first time. */
const FIRST_SAMPLE_GAP_MS = 200;
/** How long a GET waits for the very first sample of a workspace that just started. */
const FIRST_SAMPLE_WAIT_MS = 3_000;

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

interface Sample {
  cpuTotal: number;
  systemTotal: number;
  figures: { cpu: string; memory: string };
}

export function createStats(deps: { engine: Engine; clock: Clock; log: Logger; templates: TemplateRegistry; running: () => Promise<WorkspaceRow[]> }) {
  const { engine, clock } = deps;
  /** The last sample per container (its counters restart with the container). */
  const samples = new Map<string, Sample>();
  /** The first sample of a container, while it is being taken, so a GET and the loop share it. */
  const firsts = new Map<string, Promise<void>>();
  /** The last disk figure per workspace (it outlives a stop: the volume stays). */
  const disks = new Map<string, { text: string; at: number }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = true;

  const memoryLimit = (row: WorkspaceRow) => (deps.templates.get(row.template)?.resources.memoryMb ?? 0) * MiB;

  async function sampleDisk(row: WorkspaceRow, cid: string) {
    const seen = disks.get(row.id);
    if (seen && clock.now() - seen.at < DISK_EVERY_MS) return;
    const r = await engine.execCollect(cid, ['/bin/sh', '-c', `timeout 3 du -sk ${MOUNT_PATH} 2>/dev/null | cut -f1; df -kP ${MOUNT_PATH} | tail -n 1`]);
    const [usedLine, dfLine] = r.stdout.trim().split('\n');
    const used = Number(usedLine);
    const total = Number(dfLine?.trim().split(/\s+/)[1]);
    if (!Number.isFinite(used) || !Number.isFinite(total) || !usedLine) return;
    disks.set(row.id, { text: `${formatBytes(used * 1024)} / ${formatBytes(total * 1024)}`, at: clock.now() });
  }

  /** One reading of a running workspace's container, against its previous one. */
  async function sample(row: WorkspaceRow): Promise<void> {
    const cid = row.containerId!;
    try {
      let prev: Pick<Sample, 'cpuTotal' | 'systemTotal'> | undefined = samples.get(cid);
      let s = await engine.stats(cid);
      if (!prev) {
        // No earlier reading: take a second one shortly after, rather than the engine's 1 s+ two-reading wait.
        prev = s;
        await Bun.sleep(FIRST_SAMPLE_GAP_MS);
        s = await engine.stats(cid);
      }
      const sys = s.systemTotal - prev.systemTotal;
      const cpu = sys > 0 ? ((s.cpuTotal - prev.cpuTotal) / sys) * s.onlineCpus * 100 : 0;
      const memory = `${formatBytes(s.memoryUsed)} / ${formatBytes(s.memoryLimit || memoryLimit(row))}`;
      samples.set(cid, { cpuTotal: s.cpuTotal, systemTotal: s.systemTotal, figures: { cpu: `${Math.max(0, cpu).toFixed(2)}%`, memory } });
      await sampleDisk(row, cid);
    } catch (e) {
      deps.log.debug('stats not sampled', { workspace: row.id, ...errorFields(e) });
    }
  }

  function first(row: WorkspaceRow): Promise<void> {
    const cid = row.containerId!;
    let p = firsts.get(cid);
    if (!p) {
      p = sample(row).finally(() => firsts.delete(cid));
      firsts.set(cid, p);
    }
    return p;
  }

  /** One round over every running workspace; containers no longer running lose their sample. */
  async function round() {
    const rows = (await deps.running()).filter((r) => r.containerId);
    const live = new Set(rows.map((r) => r.containerId!));
    for (const cid of samples.keys()) if (!live.has(cid)) samples.delete(cid);
    let next = 0;
    const worker = async () => {
      while (!stopped && next < rows.length) {
        const row = rows[next++]!;
        await (samples.has(row.containerId!) ? sample(row) : first(row));
      }
    };
    await Promise.all(Array.from({ length: Math.min(SAMPLE_CONCURRENCY, rows.length) }, worker));
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      round()
        .catch((e) => deps.log.warn('stats round failed', errorFields(e)))
        .finally(schedule);
    }, SAMPLE_EVERY_MS);
    timer.unref?.();
  }

  return {
    /**
     * The last sample of a running workspace (zeros and the last disk figure otherwise). Only a
     * workspace not sampled yet (it just started) waits, up to FIRST_SAMPLE_WAIT_MS, for its first.
     */
    async of(row: WorkspaceRow): Promise<WorkspaceStats> {
      const disk = () => disks.get(row.id)?.text ?? 'unknown';
      const idle = () => ({ cpu: '0.00%', memory: `0B / ${formatBytes(memoryLimit(row))}`, disk: disk() });
      if (row.status !== 'running' || !row.containerId) return idle();
      if (!samples.has(row.containerId)) await Promise.race([first(row), Bun.sleep(FIRST_SAMPLE_WAIT_MS)]);
      const s = samples.get(row.containerId);
      return s ? { ...s.figures, disk: disk() } : idle();
    },

    /** Takes the first sample of a workspace that just became running, before anyone asks for it. */
    begin(row: WorkspaceRow) {
      if (!stopped && row.status === 'running' && row.containerId) void first(row);
    },

    /** Drops the samples of a container that stopped (its counters restart) or a workspace that is gone. */
    forget(row: WorkspaceRow, opts: { disk: boolean }) {
      if (row.containerId) samples.delete(row.containerId);
      if (opts.disk) disks.delete(row.id);
    },

    start() {
      if (!stopped) return;
      stopped = false;
      schedule();
    },

    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export type Stats = ReturnType<typeof createStats>;
