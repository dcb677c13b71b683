// Idle stop: when each workspace was last used, and the sweep that stops a running workspace left
// unused for its `autoStopMinutes`. Last use is kept in memory, not in the row: every API call on a
// workspace touches it, and a write per request would cost more than the feature saves. After a
// restart of Keel a workspace counts from the later of its last settle (`updatedAt`) and the start-up,
// so a restart never stops anything early.
//
// A module of the service, not of the lifecycle: access, terminals and previews record use here, and
// the lifecycle hands it the sweep's two callbacks when it starts (no late-bound cycle through it).
import { errorFields, type Clock, type Logger } from '../../platform/runtime';
import type { WorkspaceRow } from './workspaces.tables';

/** The sweep runs at least this often, and at most once a second (short autoStopMinutes, tests). */
const MAX_SWEEP_MS = 30_000;
const MIN_SWEEP_MS = 1_000;

/** What the sweep asks the lifecycle, given at start(). */
export interface IdleSweep {
  /** Workspaces running or on their way to, whoever owns them. */
  awake(): Promise<WorkspaceRow[]>;
  /** Stops a workspace found idle (the state machine's idle stop; refused quietly if its status moved). */
  stopIdle(row: WorkspaceRow): Promise<void>;
}

export function createActivity(deps: { clock: Clock; log: Logger }) {
  const { clock, log } = deps;
  let sweeper: IdleSweep | undefined;
  const last = new Map<string, number>();
  const startedAt = clock.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let nextAt = Infinity;

  /** When `row` was last used: a touch, its last status change, or Keel's start-up, whichever is latest. */
  const lastUse = (row: WorkspaceRow) => Math.max(last.get(row.id) ?? 0, Date.parse(row.updatedAt) || 0, startedAt);

  async function sweep(): Promise<number> {
    const now = clock.now();
    let shortest = Infinity;
    // Those on their way to running count for the period: their countdown starts soon.
    for (const row of (await sweeper?.awake()) ?? []) {
      if (!(row.autoStopMinutes > 0)) continue;
      const limitMs = row.autoStopMinutes * 60_000;
      shortest = Math.min(shortest, limitMs);
      if (row.status === 'running' && now - lastUse(row) >= limitMs) await sweeper!.stopIdle(row);
    }
    // A sixth of the shortest limit: a workspace stops at most ~17 % after its time, never before.
    return period(shortest);
  }

  /** A sixth of the limit, within the bounds above. */
  const period = (limitMs: number) => Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, limitMs / 6));

  function schedule(ms: number) {
    if (timer) clearTimeout(timer);
    nextAt = clock.now() + ms;
    timer = setTimeout(async () => {
      let next = MAX_SWEEP_MS;
      try {
        next = await sweep();
      } catch (e) {
        log.warn('idle sweep failed', errorFields(e));
      }
      if (timer) schedule(next);
    }, ms);
    timer.unref?.();
  }

  return {
    /**
     * Records use of a workspace now: it resets the idle countdown. Access calls it for every API
     * call on the workspace (exec, logs and agent turns included); features that see use Keel's API
     * does not (terminal input, preview traffic) call it themselves.
     */
    touch(id: string) {
      last.set(id, clock.now());
    },
    /**
     * A workspace with this limit is about to run (create, start): sweeps come sooner if it needs them,
     * else a 3-second limit would wait out the 30-second period chosen when nothing needed less.
     */
    expect(autoStopMinutes: number) {
      if (!timer || !(autoStopMinutes > 0)) return;
      const ms = period(autoStopMinutes * 60_000);
      if (clock.now() + ms < nextAt) schedule(ms);
    },
    forget(id: string) {
      last.delete(id);
    },
    /** Starts the idle sweep over what `sweep` reports (the lifecycle's start-up). */
    start(sweep: IdleSweep) {
      sweeper = sweep;
      if (!timer) schedule(MIN_SWEEP_MS);
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

export type Activity = ReturnType<typeof createActivity>;
