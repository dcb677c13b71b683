// Every query of the processes feature: a workspace's process rows (the output lives in memory).
import { and, desc, eq } from 'drizzle-orm';
import type { Store } from '../../../platform/store';
import { processesTables, type ProcessRow } from './processes.tables';

export function createProcessesRepository(store: Store) {
  const db = store.orm;
  const { workspaceProcesses } = processesTables(store.dialect);
  return {
    get: async (workspaceId: string, id: string): Promise<ProcessRow | undefined> =>
      (await db.select().from(workspaceProcesses).where(and(eq(workspaceProcesses.id, id), eq(workspaceProcesses.workspaceId, workspaceId))))[0],
    /** The workspace's latest `limit` processes, newest first. */
    list: (workspaceId: string, limit: number): Promise<ProcessRow[]> =>
      db.select().from(workspaceProcesses).where(eq(workspaceProcesses.workspaceId, workspaceId)).orderBy(desc(workspaceProcesses.startedAt)).limit(limit),
    async insert(row: Pick<ProcessRow, 'id' | 'workspaceId' | 'owner' | 'name' | 'command' | 'status' | 'startedAt'>): Promise<void> {
      await db.insert(workspaceProcesses).values(row);
    },
    async exited(id: string, exitCode: number, endedAt: string): Promise<void> {
      await db.update(workspaceProcesses).set({ status: 'exited', exitCode, endedAt }).where(eq(workspaceProcesses.id, id));
    },
    /** Marks every `running` row lost; answers how many. */
    markAllLost: async (endedAt: string): Promise<number> =>
      (await db.update(workspaceProcesses).set({ status: 'lost', endedAt }).where(eq(workspaceProcesses.status, 'running')).returning({ id: workspaceProcesses.id })).length,
  };
}
