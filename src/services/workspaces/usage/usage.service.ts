// Usage per actor: tokens (the agent's per-turn records, the same the daily token limit sums),
// command time (each command's wall time once it is gone) and workspace running time (stretches
// opened by a `started` event and closed by `stopped`, `failed` or `deleted`, written in the
// transaction of the change, so a crash neither loses nor doubles one).
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Orm, Store } from '../../../platform/store';
import { isoNow, newId, type Clock } from '../../../platform/runtime';
import type { WorkspaceRow } from '../workspaces.tables';
import type { UsageQuery, UsageReport } from './usage.model';
import { createUsageRepository } from './usage.repository';
import { WorkspaceErrors } from '../workspaces.errors';

const DAY_MS = 86_400_000;

export interface UsageDeps {
  store: Store;
  clock: Clock;
  /** Tokens by model that `actor` spent in [from, to) (the agent's usage records). */
  tokensByModel(actor: string, from: string, to: string): Promise<{ model: string; input: number; output: number }[]> | { model: string; input: number; output: number }[];
}

/** A date means its UTC day's start (`end`: the next day's); a time is taken as given. */
function instant(value: string, end: boolean): number {
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(ms)) throw WorkspaceErrors.INVALID_REQUEST('from and to must be ISO dates or UTC times', { fields: ['from', 'to'] });
  return value.length === 10 && end ? ms + DAY_MS : ms;
}

export function createUsage(deps: UsageDeps) {
  const { clock } = deps;
  const records = createUsageRepository(deps.store);
  return {
    async recordExec(actor: Actor, workspaceId: string, ms: number) {
      // A record lost to a closing database must not fail the command whose result it follows.
      try {
        await records.insertExec({ id: newId('uex', clock), actor: actor.id, workspaceId, durationMs: Math.max(0, Math.round(ms)), at: isoNow(clock) });
      } catch {
        /* counted as nothing */
      }
    },

    /** Opens or closes the workspace's running stretch, in the transaction of its change. */
    async onWorkspaceEvent(tx: Orm, event: string, row: WorkspaceRow) {
      const at = isoNow(clock);
      if (event === 'started' || event === 'restarted' || event === 'stopped' || event === 'failed' || event === 'deleted') {
        await records.closeRunning(tx, row.id, at);
      }
      if (event === 'started' || event === 'restarted') {
        await records.openRunning(tx, { id: newId('urn', clock), owner: row.owner, workspaceId: row.id, startedAt: at });
      }
    },

    async report(caller: Actor, q: UsageQuery): Promise<UsageReport> {
      const actor = q.actor ?? caller.id;
      if (actor !== caller.id && !caller.admin) throw WorkspaceErrors.FORBIDDEN("only admins may read another actor's usage");
      const now = clock.now();
      const today = now - (now % DAY_MS);
      const fromMs = q.from ? instant(q.from, false) : today;
      const toMs = q.to ? instant(q.to, true) : today + DAY_MS;
      if (toMs <= fromMs) throw WorkspaceErrors.INVALID_REQUEST('to must be after from', { fields: ['from', 'to'] });
      const from = new Date(fromMs).toISOString();
      const to = new Date(toMs).toISOString();

      const byModel: UsageReport['tokens']['byModel'] = {};
      let total = 0;
      for (const r of await deps.tokensByModel(actor, from, to)) {
        byModel[r.model] = { promptTokens: r.input, completionTokens: r.output, totalTokens: r.input + r.output };
        total += r.input + r.output;
      }
      const execMs = await records.execMs(actor, from, to);
      let runningMs = 0;
      for (const s of await records.runningBetween(actor, from, to)) {
        const start = Math.max(Date.parse(s.startedAt), fromMs);
        const end = Math.min(s.endedAt ? Date.parse(s.endedAt) : now, toMs);
        if (end > start) runningMs += end - start;
      }
      return {
        actor,
        from,
        to,
        tokens: { byModel, total },
        execSeconds: Math.round(execMs) / 1000,
        runningMinutes: Math.round(runningMs / 600) / 100,
      };
    },
  };
}

export type Usage = ReturnType<typeof createUsage>;
