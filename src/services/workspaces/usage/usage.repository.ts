// Every query of usage: command time records and running stretches (the agent's tokens are its own
// repository's, given to the service by the composition root).
import { and, eq, gt, gte, isNull, lt, or, sum } from 'drizzle-orm';
import type { Orm, Store } from '../../../platform/store';
import { usageTables } from './usage.tables';

export function createUsageRepository(store: Store) {
  const db = store.orm;
  const { usageExec, usageRunning } = usageTables(store.dialect);
  return {
    async insertExec(row: { id: string; actor: string; workspaceId: string; durationMs: number; at: string }): Promise<void> {
      await db.insert(usageExec).values(row);
    },
    /** Ends the workspace's open running stretch, if any, in the caller's transaction. */
    async closeRunning(tx: Orm, workspaceId: string, at: string): Promise<void> {
      await tx.update(usageRunning).set({ endedAt: at }).where(and(eq(usageRunning.workspaceId, workspaceId), isNull(usageRunning.endedAt)));
    },
    async openRunning(tx: Orm, row: { id: string; owner: string; workspaceId: string; startedAt: string }): Promise<void> {
      await tx.insert(usageRunning).values({ ...row, endedAt: null });
    },
    /** The actor's command time in [from, to), in ms. */
    execMs: async (actor: string, from: string, to: string): Promise<number> =>
      Number((await db.select({ ms: sum(usageExec.durationMs) }).from(usageExec).where(and(eq(usageExec.actor, actor), gte(usageExec.at, from), lt(usageExec.at, to))))[0]?.ms ?? 0),
    /** The owner's running stretches that overlap [from, to) (an open one has no end). */
    runningBetween: (owner: string, from: string, to: string) =>
      db.select().from(usageRunning).where(and(eq(usageRunning.owner, owner), lt(usageRunning.startedAt, to), or(isNull(usageRunning.endedAt), gt(usageRunning.endedAt, from)))),
  };
}
