// The processes started through the API: what was asked and how it ended. Output stays in memory
// (bounded); the rows are what survives a restart of Keel, which marks those left `running` as `lost`.
import { defineTables } from '../../../platform/db-schema';

export type ProcessStatus = 'running' | 'exited' | 'lost';

export const processesTables = defineTables(({ index, integer, table, text }) => {
  const workspaceProcesses = table(
    'workspaces_processes',
    {
      id: text('id').primaryKey(),
      workspaceId: text('workspace_id').notNull(),
      owner: text('owner').notNull(),
      name: text('name'),
      command: text('command').notNull(),
      status: text('status').$type<ProcessStatus>().notNull(),
      exitCode: integer('exit_code'),
      startedAt: text('started_at').notNull(),
      endedAt: text('ended_at'),
    },
    (t) => [index('workspaces_processes_workspace_idx').on(t.workspaceId, t.startedAt), index('workspaces_processes_status_idx').on(t.status)],
  );
  return { workspaceProcesses };
});

export const { workspaceProcesses } = processesTables('sqlite');

export type ProcessRow = typeof workspaceProcesses.$inferSelect;
