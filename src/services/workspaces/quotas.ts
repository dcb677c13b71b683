// Quotas per actor (CONTRACT.md, "Tenants apart"): how many workspaces one actor may hold, how many
// may run, and how many exec calls and streams one actor may keep open at once. Admin tokens are
// exempt. Past a quota the answer is 429 QUOTA_EXCEEDED with details {quota, limit}, and nothing was
// created or started.
//
// Two kinds of quota, counted where the truth is:
// - stored ones (`workspaces`, `running`, `volumes`) are counted from the workspaces table, and the check runs in
//   the same synchronous step as the insert or status move it guards: no await between them, so two
//   concurrent requests cannot both pass the check. A workspace that stops or is deleted frees its
//   place by changing its row; there is nothing to give back.
// - held ones (`execs`, `streams`) are counters in this process: a caller takes a slot and gives it
//   back when its exec ends or its stream closes.
//
// For features (logs, exec, and those to come such as agent sessions), the interface is `take` and
// `hold`:
//
//     const slot = quotas.take(actor, 'streams');       // 429 QUOTA_EXCEEDED when the actor has none left
//     try { ... } finally { slot.release(); }            // idempotent
//
//     quotas.hold(actor, 'streams', stream.signal);      // the slot goes back when the signal aborts
//
// An SSE stream's signal (platform/http/sse.ts) aborts on every end: the client leaving, the events
// ending, a dropped slow reader, a shutdown. So `hold(actor, 'streams', stream.signal)` right after
// `sse.open` is all an agent stream needs, plus `release` if it fails before `respond`.
import { and, count, eq, inArray, ne, sql } from 'drizzle-orm';
import { AppError } from '../../platform/errors';
import './workspaces.errors';
import type { Db } from '../../platform/db';
import type { Actor } from '../../platform/auth/workspace-token';
import { retainedVolumes, workspaces, type WorkspaceRow, type WorkspaceStatus } from './workspaces.tables';

export type QuotaName = 'workspaces' | 'running' | 'execs' | 'streams' | 'volumes';
export type HeldQuota = 'execs' | 'streams';

export interface QuotaLimits {
  /** Workspaces an actor holds, whatever their status (APP_QUOTA_WORKSPACES). */
  workspaces: number;
  /** Workspaces that run or are on their way to (creating, starting, restarting, running) (APP_QUOTA_RUNNING). */
  running: number;
  /** Exec calls in flight, JSON and streaming (APP_QUOTA_EXECS). */
  execs: number;
  /** Open log follows, streaming execs and agent streams (APP_QUOTA_STREAMS). */
  streams: number;
  /** Volumes kept by deletes of persistent workspaces, until their owner removes them (APP_QUOTA_VOLUMES). */
  volumes: number;
}

/**
 * Statuses that hold (or are about to hold) a running container. `stopping` is not counted: the
 * workspace is on its way down, and counting it would refuse a start right after a stop for as long
 * as the stop's grace period. `paused` is: its memory is still held.
 */
export const RUNNING_STATUSES = ['creating', 'starting', 'restarting', 'running', 'paused'] as const satisfies readonly WorkspaceStatus[];

export interface QuotaSlot {
  /** Gives the slot back; calling it again does nothing. */
  release(): void;
}

/** `sessions` and `dailyTokens` are the agent's own quotas, counted from its tables (agent/agent.usage.ts). */
export const quotaExceeded = (quota: QuotaName | 'sessions' | 'dailyTokens' | 'processes', limit: number) =>
  new AppError('QUOTA_EXCEEDED', `quota exceeded: ${quota} (limit ${limit}); free one first`, { quota, limit });

const NO_SLOT: QuotaSlot = { release() {} };

export function createQuotas(deps: { db: Db; limits: QuotaLimits }) {
  const { db, limits } = deps;
  const owned = db.select({ n: count() }).from(workspaces).where(eq(workspaces.owner, sql.placeholder('owner'))).prepare();
  const runningOf = db
    .select({ n: count() })
    .from(workspaces)
    .where(and(eq(workspaces.owner, sql.placeholder('owner')), inArray(workspaces.status, [...RUNNING_STATUSES]), ne(workspaces.id, sql.placeholder('id'))))
    .prepare();
  const keptOf = db.select({ n: count() }).from(retainedVolumes).where(eq(retainedVolumes.owner, sql.placeholder('owner'))).prepare();
  const held = new Map<string, Record<HeldQuota, number>>();
  const countKept = (owner: string) => keptOf.get({ owner })?.n ?? 0;

  const countOwned = (owner: string) => owned.get({ owner })?.n ?? 0;
  /** Running workspaces of `owner`, not counting workspace `except`. */
  const countRunning = (owner: string, except = '') => runningOf.get({ owner, id: except })?.n ?? 0;

  function ensureRoomToCreate(actor: Actor) {
    if (actor.admin) return;
    if (countOwned(actor.id) >= limits.workspaces) throw quotaExceeded('workspaces', limits.workspaces);
    // A new workspace starts at once: it needs a running place as well.
    if (countRunning(actor.id) >= limits.running) throw quotaExceeded('running', limits.running);
  }

  function take(actor: Actor, quota: HeldQuota): QuotaSlot {
    if (actor.admin) return NO_SLOT;
    let mine = held.get(actor.id);
    if (!mine) held.set(actor.id, (mine = { execs: 0, streams: 0 }));
    if (mine[quota] >= limits[quota]) throw quotaExceeded(quota, limits[quota]);
    mine[quota]++;
    const counts = mine;
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        counts[quota]--;
        if (counts.execs === 0 && counts.streams === 0 && held.get(actor.id) === counts) held.delete(actor.id);
      },
    };
  }

  return {
    limits,

    /** Throws 429 when `actor` may not create another workspace now (a cheap early check; `admitCreate` is the binding one). */
    checkCreate: ensureRoomToCreate,

    /** Runs `insert` (synchronous) only if `actor` has room for one more workspace that will run; 429 otherwise. */
    admitCreate<T>(actor: Actor, insert: () => T): T {
      ensureRoomToCreate(actor);
      return insert();
    },

    /**
     * Runs `move` (synchronous: the status change to starting or restarting) only if the workspace
     * already counts as running or `actor` has a running place left; 429 otherwise.
     */
    admitRunning<T>(actor: Actor, row: WorkspaceRow, move: () => T): T {
      if (!actor.admin && !(RUNNING_STATUSES as readonly string[]).includes(row.status) && countRunning(row.owner, row.id) >= limits.running) {
        throw quotaExceeded('running', limits.running);
      }
      return move();
    },

    /**
     * Runs `keep` (synchronous: records the kept volume) only if `owner` keeps fewer volumes than the
     * quota or `actor` is an admin; 429 otherwise, and the delete that asked keeps nothing.
     */
    admitKeptVolume<T>(actor: Actor, owner: string, keep: () => T): T {
      if (!actor.admin && countKept(owner) >= limits.volumes) throw quotaExceeded('volumes', limits.volumes);
      return keep();
    },

    /** A slot of `quota` for `actor` (admins: a slot that counts nothing); 429 QUOTA_EXCEEDED when none is left. */
    take,

    /** Takes a slot and gives it back when `signal` aborts (at once if it already has). */
    hold(actor: Actor, quota: HeldQuota, signal: AbortSignal): QuotaSlot {
      const slot = take(actor, quota);
      if (signal.aborted) slot.release();
      else signal.addEventListener('abort', () => slot.release(), { once: true });
      return slot;
    },

    /** What `actor` holds against each quota (admins: their own counts; they are not limited). */
    usage(actor: Actor): Record<QuotaName, number> {
      const mine = held.get(actor.id);
      return { workspaces: countOwned(actor.id), running: countRunning(actor.id), execs: mine?.execs ?? 0, streams: mine?.streams ?? 0, volumes: countKept(actor.id) };
    },
  };
}

export type Quotas = ReturnType<typeof createQuotas>;
