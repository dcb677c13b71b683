// Quotas per actor (CONTRACT.md, "Tenants apart"): how many workspaces one actor may hold, how many
// may run, and how many exec calls and streams one actor may keep open at once. Admin tokens are
// exempt. Past a quota the answer is 429 QUOTA_EXCEEDED with details {quota, limit}, and nothing was
// created or started.
//
// Two kinds of quota, counted where the truth is:
// - stored ones (`workspaces`, `running`, `volumes`) are counted from the workspaces table, and the check runs in
//   the transaction of the insert or status move it guards, under the owner's lock (Store.lock), so two
//   concurrent requests, in one process or two, cannot both pass the check. A workspace that stops or
//   is deleted frees its place by changing its row; there is nothing to give back.
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
// ending, a dropped slow reader, a shutdown. The held slots are taken by the services, never by a
// transport: a service that opens a stream does it through `holdingStream(actor, signal, open)` (the
// slot goes back when the signal aborts, or at once when opening fails), and the exec service takes
// the exec slots (exec.service.ts), so HTTP routes, MCP tools and agent tools count alike.
import { AppError } from '../../platform/errors';
import { WorkspaceErrors } from './workspaces.errors';
import type { Orm, Store } from '../../platform/store';
import type { Actor } from '../../platform/auth/workspace-token';
import type { WorkspaceRow, WorkspaceStatus } from './workspaces.tables';
import { createQuotasRepository } from './quotas.repository';

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
  WorkspaceErrors.QUOTA_EXCEEDED(`quota exceeded: ${quota} (limit ${limit}); free one first`, { quota, limit });

const NO_SLOT: QuotaSlot = { release() {} };

export function createQuotas(deps: { store: Store; limits: QuotaLimits }) {
  const { limits } = deps;
  const counts = createQuotasRepository(deps.store);
  const held = new Map<string, Record<HeldQuota, number>>();
  // Counted through the caller's transaction (`tx`), so the count and the write it guards see one state.
  const { countKept, countOwned } = counts;
  /** Running workspaces of `owner`, not counting workspace `except`. */
  const countRunning = (owner: string, except = '', tx?: Orm) => counts.countIn(owner, RUNNING_STATUSES, except, tx);

  /** Why `actor` may not create another workspace now, or undefined. */
  async function noRoomToCreate(actor: Actor, tx?: Orm): Promise<AppError | undefined> {
    if (actor.admin) return undefined;
    if ((await countOwned(actor.id, tx)) >= limits.workspaces) return quotaExceeded('workspaces', limits.workspaces);
    // A new workspace starts at once: it needs a running place as well.
    if ((await countRunning(actor.id, '', tx)) >= limits.running) return quotaExceeded('running', limits.running);
    return undefined;
  }

  /** Runs `write` in a transaction holding `owner`'s quota lock, unless `refusal` (read in the same transaction) says why not. */
  function underLock<T>(owner: string, refusal: (tx: Orm) => Promise<AppError | undefined>, write: (tx: Orm) => Promise<T>): Promise<T> {
    return counts.underOwnerLock(owner, async (tx) => {
      const refused = await refusal(tx);
      if (refused) throw refused;
      return write(tx);
    });
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

  function hold(actor: Actor, quota: HeldQuota, signal: AbortSignal): QuotaSlot {
    const slot = take(actor, quota);
    if (signal.aborted) slot.release();
    else signal.addEventListener('abort', () => slot.release(), { once: true });
    return slot;
  }

  return {
    limits,

    /** Throws 429 when `actor` may not create another workspace now (a cheap early check; `admitCreate` is the binding one). */
    async checkCreate(actor: Actor) {
      const refused = await noRoomToCreate(actor);
      if (refused) throw refused;
    },

    /** Runs `insert` in the transaction of the check only if `actor` has room for one more workspace that will run; 429 otherwise. */
    admitCreate<T>(actor: Actor, insert: (tx: Orm) => Promise<T>): Promise<T> {
      return underLock(actor.id, (tx) => noRoomToCreate(actor, tx), insert);
    },

    /**
     * Runs `move` (the status change to starting or restarting) in the transaction of the check only if
     * the workspace already counts as running or `actor` has a running place left; 429 otherwise.
     * `row` is read again inside: a status changed since the caller read it counts as it is now.
     */
    admitRunning<T>(actor: Actor, row: WorkspaceRow, move: (tx: Orm) => Promise<T>): Promise<T> {
      const refusal = async (tx: Orm) => {
        const status = (await counts.statusOf(tx, row.id)) ?? row.status;
        const full = !actor.admin && !(RUNNING_STATUSES as readonly string[]).includes(status) && (await countRunning(row.owner, row.id, tx)) >= limits.running;
        return full ? quotaExceeded('running', limits.running) : undefined;
      };
      return underLock(row.owner, refusal, move);
    },

    /**
     * Runs `keep` (records the kept volume) in the transaction of the check only if `owner` keeps fewer
     * volumes than the quota or `actor` is an admin; 429 otherwise, and the delete that asked keeps nothing.
     */
    admitKeptVolume<T>(actor: Actor, owner: string, keep: (tx: Orm) => Promise<T>): Promise<T> {
      const refusal = async (tx: Orm) => (!actor.admin && (await countKept(owner, tx)) >= limits.volumes ? quotaExceeded('volumes', limits.volumes) : undefined);
      return underLock(owner, refusal, keep);
    },

    /** A slot of `quota` for `actor` (admins: a slot that counts nothing); 429 QUOTA_EXCEEDED when none is left. */
    take,

    /** Takes a slot and gives it back when `signal` aborts (at once if it already has). */
    hold,

    /**
     * Opens a stream of `actor` holding one of its stream slots until `signal` (the stream's end,
     * however it ends) aborts: 429 QUOTA_EXCEEDED before `open` runs when none is left, and the slot
     * back at once when `open` fails.
     */
    async holdingStream<T>(actor: Actor, signal: AbortSignal, open: () => Promise<T> | T): Promise<T> {
      const slot = hold(actor, 'streams', signal);
      try {
        return await open();
      } catch (e) {
        slot.release();
        throw e;
      }
    },

    /** What `actor` holds against each quota (admins: their own counts; they are not limited). */
    async usage(actor: Actor): Promise<Record<QuotaName, number>> {
      const mine = held.get(actor.id);
      const [workspaces, running, volumes] = await Promise.all([countOwned(actor.id), countRunning(actor.id), countKept(actor.id)]);
      return { workspaces, running, execs: mine?.execs ?? 0, streams: mine?.streams ?? 0, volumes };
    },
  };
}

export type Quotas = ReturnType<typeof createQuotas>;
