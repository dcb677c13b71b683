// What each actor spent besides tokens (those are agent_usage): the wall time of its commands, and
// the time its workspaces ran. Kept apart from the workspaces so a deleted one stays counted.
import { defineTables } from '../../../platform/db-schema';

export const usageTables = defineTables(({ index, integer, table, text }) => {
  /** One command run in a workspace (exec, streaming exec, an agent's run_command), once it is gone. */
  const usageExec = table(
    'usage_exec',
    {
      id: text('id').primaryKey(),
      /** Who ran it (the token's `sub`; an admin acting on another's workspace is counted as the admin). */
      actor: text('actor').notNull(),
      workspaceId: text('workspace_id').notNull(),
      durationMs: integer('duration_ms').notNull(),
      /** ISO 8601 UTC end of the command. */
      at: text('at').notNull(),
    },
    (t) => [index('usage_exec_actor_at_idx').on(t.actor, t.at)],
  );

  /** One stretch of a workspace running: from its `started` event to its `stopped`, `failed` or `deleted`. */
  const usageRunning = table(
    'usage_running',
    {
      id: text('id').primaryKey(),
      /** The workspace's owner. */
      owner: text('owner').notNull(),
      workspaceId: text('workspace_id').notNull(),
      startedAt: text('started_at').notNull(),
      /** Null while it runs. */
      endedAt: text('ended_at'),
    },
    (t) => [index('usage_running_owner_idx').on(t.owner, t.startedAt), index('usage_running_open_idx').on(t.workspaceId, t.endedAt)],
  );
  return { usageExec, usageRunning };
});

export const { usageExec, usageRunning } = usageTables('sqlite');
