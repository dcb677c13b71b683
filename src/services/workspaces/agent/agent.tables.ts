// Agent sessions, their messages and their event log. The log is the durable record of every turn
// as it happened (each `delta`, `tool`, `done` or `error` with its per-session id), so a client can
// resume after a disconnect and a turn cut short by a crash can be closed from what was stored.
import { defineTables } from '../../../platform/db-schema';

export const agentTables = defineTables(({ index, integer, primaryKey, table, text }) => {
  const agentSessions = table(
    'agent_sessions',
    {
      id: text('id').primaryKey(),
      owner: text('owner').notNull(),
      /** Bound at creation; the workspace may later stop or disappear (tools then say so). */
      workspaceId: text('workspace_id').notNull(),
      /** `provider/name`. */
      model: text('model').notNull(),
      /** JSON of the validated `context` object. */
      context: text('context').notNull(),
      /** `awaiting_approval` while a tool call of its turn waits for a decision. */
      status: text('status').$type<'active' | 'awaiting_approval'>().notNull(),
      /** JSON: `"never"`, `"always"` or an array of tool names whose calls wait for a decision. */
      toolApproval: text('tool_approval').notNull().default('"never"'),
      /** JSON `[{name, url, headers?}]`: MCP servers whose tools the session's model may call. */
      mcpServers: text('mcp_servers').notNull().default('[]'),
      /** Sums over every turn of the session. */
      promptTokens: integer('prompt_tokens').notNull().default(0),
      completionTokens: integer('completion_tokens').notNull().default(0),
      totalTokens: integer('total_tokens').notNull().default(0),
      createdAt: text('created_at').notNull(),
      updatedAt: text('updated_at').notNull(),
    },
    (t) => [index('agent_sessions_owner_idx').on(t.owner, t.createdAt)],
  );

  const agentMessages = table(
    'agent_messages',
    {
      id: text('id').primaryKey(),
      sessionId: text('session_id')
        .notNull()
        .references(() => agentSessions.id, { onDelete: 'cascade' }),
      /** Position in the session: one turn at a time, so the count at insert is unique. */
      ordinal: integer('ordinal').notNull(),
      role: text('role').$type<'user' | 'assistant'>().notNull(),
      content: text('content').notNull(),
      /** Assistant only: null while its turn runs; set once when the turn ends. */
      finishReason: text('finish_reason'),
      /** Assistant only: JSON `[{id, name, input, output}]`, in call order. */
      toolCalls: text('tool_calls'),
      /** Assistant only: JSON of the ordered text and tool parts, to replay the turn to the model. */
      parts: text('parts'),
      promptTokens: integer('prompt_tokens'),
      completionTokens: integer('completion_tokens'),
      totalTokens: integer('total_tokens'),
      /** Assistant only: the session's last event id before the turn began (its events come after it). */
      afterEventId: integer('after_event_id'),
      createdAt: text('created_at').notNull(),
    },
    (t) => [index('agent_messages_session_idx').on(t.sessionId, t.ordinal)],
  );

  const agentEvents = table(
    'agent_events',
    {
      sessionId: text('session_id')
        .notNull()
        .references(() => agentSessions.id, { onDelete: 'cascade' }),
      /** The SSE `id:`, increasing within the session from 1. */
      seq: integer('seq').notNull(),
      event: text('event').$type<'delta' | 'tool' | 'approval' | 'done' | 'error'>().notNull(),
      /** JSON of the event's data. */
      data: text('data').notNull(),
      createdAt: text('created_at').notNull(),
    },
    (t) => [primaryKey({ columns: [t.sessionId, t.seq] })],
  );

  /**
   * Tokens spent, one record per turn: the daily limit per actor (APP_AGENT_DAILY_TOKENS) sums them, and
   * usage reports read the same records. No foreign key: what was spent stays counted after its session
   * is deleted.
   */
  const agentUsage = table(
    'agent_usage',
    {
      id: text('id').primaryKey(),
      /** Who the tokens are counted against: the caller of the turn. */
      actor: text('actor').notNull(),
      sessionId: text('session_id').notNull(),
      /** `provider/name`, as on the session. */
      model: text('model').notNull(),
      inputTokens: integer('input_tokens').notNull(),
      outputTokens: integer('output_tokens').notNull(),
      /** ISO 8601 UTC time the turn ended (compares as text in time order). */
      at: text('at').notNull(),
    },
    (t) => [index('agent_usage_actor_at_idx').on(t.actor, t.at)],
  );

  /**
   * Tool calls waiting for (or given) a person's decision. A pending row is the durable half of a paused
   * turn: with the turn's stored parts it is enough to go on after a restart of Keel.
   */
  const agentApprovals = table(
    'agent_approvals',
    {
      id: text('id').primaryKey(),
      sessionId: text('session_id')
        .notNull()
        .references(() => agentSessions.id, { onDelete: 'cascade' }),
      /** The assistant message of the paused turn. */
      messageId: text('message_id').notNull(),
      toolCallId: text('tool_call_id').notNull(),
      name: text('name').notNull(),
      /** JSON of the arguments the model gave. */
      input: text('input').notNull(),
      status: text('status').$type<'pending' | 'approved' | 'denied'>().notNull(),
      reason: text('reason'),
      decidedBy: text('decided_by'),
      createdAt: text('created_at').notNull(),
      /** Undecided past this instant, the call is denied (APP_AGENT_APPROVAL_TIMEOUT). */
      expiresAt: text('expires_at').notNull(),
      decidedAt: text('decided_at'),
    },
    (t) => [index('agent_approvals_session_idx').on(t.sessionId, t.status)],
  );
  return { agentSessions, agentMessages, agentEvents, agentUsage, agentApprovals };
});

export const { agentSessions, agentMessages, agentEvents, agentUsage, agentApprovals } = agentTables('sqlite');

export type AgentApprovalRow = typeof agentApprovals.$inferSelect;
export type AgentSessionRow = typeof agentSessions.$inferSelect;
export type AgentMessageRow = typeof agentMessages.$inferSelect;
export type AgentEventRow = typeof agentEvents.$inferSelect;
export type AgentUsageRow = typeof agentUsage.$inferSelect;
