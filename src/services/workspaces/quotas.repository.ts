// The counts the stored quotas are checked against (quotas.ts), each through the caller's
// transaction when given, and the transaction that holds an owner's quota lock while it counts and writes.
import { and, count, eq, inArray, ne } from 'drizzle-orm';
import type { Orm, Store } from '../../platform/store';
import { workspacesTables, type WorkspaceStatus } from './workspaces.tables';

export function createQuotasRepository(store: Store) {
  const { workspaces, retainedVolumes } = workspacesTables(store.dialect);
  const first = async (q: Promise<{ n: number }[]>) => (await q)[0]?.n ?? 0;
  return {
    /** Runs `body` in a transaction holding `owner`'s quota lock (Store.lock), so a count and its write see one state. */
    underOwnerLock: <T>(owner: string, body: (tx: Orm) => Promise<T>): Promise<T> =>
      store.transaction(async (tx) => {
        await store.lock(tx, `workspaces-quota:${owner}`);
        return body(tx);
      }),
    countKept: (owner: string, tx: Orm = store.orm) => first(tx.select({ n: count() }).from(retainedVolumes).where(eq(retainedVolumes.owner, owner))),
    countOwned: (owner: string, tx: Orm = store.orm) => first(tx.select({ n: count() }).from(workspaces).where(eq(workspaces.owner, owner))),
    /** Workspaces of `owner` in one of `statuses`, not counting workspace `except`. */
    countIn: (owner: string, statuses: readonly WorkspaceStatus[], except: string, tx: Orm = store.orm) =>
      first(tx.select({ n: count() }).from(workspaces).where(and(eq(workspaces.owner, owner), inArray(workspaces.status, [...statuses]), ne(workspaces.id, except)))),
    statusOf: async (tx: Orm, id: string): Promise<WorkspaceStatus | undefined> => (await tx.select({ status: workspaces.status }).from(workspaces).where(eq(workspaces.id, id)))[0]?.status,
  };
}
