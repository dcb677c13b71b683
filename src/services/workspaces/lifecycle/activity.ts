// Idle stop: when each workspace was last used, and the sweep that stops a running workspace left
// unused for its `autoStopMinutes`. Last use is kept in memory, not in the row: every API call on a
// workspace touches it, and a write per request would cost more than the feature saves. After a
// restart of Keel a workspace counts from the later of its last settle (`updatedAt`) and the start-up,
// so a restart never stops anything early.
import { errorFields, type Clock, type Logger } from '../../../platform/runtime';
import type { WorkspaceRow } from '../workspaces.tables';

/** The sweep runs at least this often, and at most once a second (short autoStopMinutes, tests). */
const MAX_SWEEP_MS = 30_000;
const MIN_SWEEP_MS = 1_000;

export function createActivity(deps: {
  clock: Clock;
  log: Logger;
  /** Running workspaces, whoever owns them. */
  running(): WorkspaceRow[];
  /** Stops a workspace found idle (the state machine's idle stop; refused quietly if its status moved). */
  stopIdle(row: WorkspaceRow): void;
}) {
  const { clock, log } = deps;
  const last = new Map<string, number>();
  const startedAt = clock.now();
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** When `row` was last used: a touch, its last status change, or Keel's start-up, whichever is latest. */
  const lastUse = (row: WorkspaceRow) => Math.max(last.get(row.id) ?? 0, Date.parse(row.updatedAt) || 0, startedAt);

  function sweep(): number {
    const now = clock.now();
    let shortest = Infinity;
    for (const row of deps.running()) {
      if (!(row.autoStopMinutes > 0)) continue;
      const limitMs = row.autoStopMinutes * 60_000;
      shortest = Math.min(shortest, limitMs);
      if (now - lastUse(row) >= limitMs) deps.stopIdle(row);
    }
    // A sixth of the shortest limit: a workspace stops at most ~17 % after its time, never before.
    return Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, shortest / 6));
  }

  function schedule(ms: number) {
    timer = setTimeout(() => {
      let next = MAX_SWEEP_MS;
      try {
        next = sweep();
      } catch (e) {
        log.warn('idle sweep failed', errorFields(e));
      }
      if (timer) schedule(next);
    }, ms);
    timer.unref?.();
  }

  return {
    /**
     * Records use of a workspace now: it resets the idle countdown. Lifecycle calls it for every API
     * call on the workspace (through access), exec, logs and agent turns; features that see use Keel's
     * API does not (terminal input, preview traffic, file writes) call `Lifecycle.touch(id)`.
     */
    touch(id: string) {
      last.set(id, clock.now());
    },
    forget(id: string) {
      last.delete(id);
    },
    start() {
      if (!timer) schedule(MIN_SWEEP_MS);
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

export type Activity = ReturnType<typeof createActivity>;
