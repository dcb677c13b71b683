// The agent tables' queries, prepared once. Events are written one by one as they happen (bun:sqlite
// is synchronous and WAL commits do not wait for the disk), so what a client saw is what is stored.
import { and, asc, count, desc, eq, gt, gte, isNull, lt, sql, sum } from 'drizzle-orm';
import type { Db } from '../../../platform/db';
import { agentApprovals, agentEvents, agentMessages, agentSessions, agentUsage, type AgentApprovalRow, type AgentMessageRow, type AgentSessionRow, type AgentUsageRow } from './agent.tables';
import type { AgentEvent, Usage } from './agent.model';

export const EVENT_PAGE = 500;

export function createAgentStore(db: Db) {
  const byId = db.select().from(agentSessions).where(eq(agentSessions.id, sql.placeholder('id'))).prepare();
  const insertEvent = db
    .insert(agentEvents)
    .values({ sessionId: sql.placeholder('sessionId'), seq: sql.placeholder('seq'), event: sql.placeholder('event'), data: sql.placeholder('data'), createdAt: sql.placeholder('createdAt') })
    .prepare();
  const eventsAfter = db
    .select()
    .from(agentEvents)
    .where(and(eq(agentEvents.sessionId, sql.placeholder('sessionId')), gt(agentEvents.seq, sql.placeholder('after'))))
    .orderBy(asc(agentEvents.seq))
    .limit(sql.placeholder('limit'))
    .prepare();
  const lastSeq = db
    .select({ seq: agentEvents.seq })
    .from(agentEvents)
    .where(eq(agentEvents.sessionId, sql.placeholder('sessionId')))
    .orderBy(desc(agentEvents.seq))
    .limit(1)
    .prepare();
  // Spelled out: inside a subquery drizzle would leave both columns unqualified.
  const messagesOf = db.select().from(agentMessages).where(eq(agentMessages.sessionId, sql.placeholder('sessionId'))).orderBy(asc(agentMessages.ordinal)).prepare();
  const insertMessage = db
    .insert(agentMessages)
    .values({
      id: sql.placeholder('id'),
      sessionId: sql.placeholder('sessionId'),
      ordinal: sql.placeholder('ordinal'),
      role: sql.placeholder('role'),
      content: sql.placeholder('content'),
      finishReason: sql.placeholder('finishReason'),
      toolCalls: sql.placeholder('toolCalls'),
      parts: sql.placeholder('parts'),
      promptTokens: sql.placeholder('promptTokens'),
      completionTokens: sql.placeholder('completionTokens'),
      totalTokens: sql.placeholder('totalTokens'),
      afterEventId: sql.placeholder('afterEventId'),
      createdAt: sql.placeholder('createdAt'),
    })
    .prepare();
  const sessionsOf = db.select({ n: count() }).from(agentSessions).where(eq(agentSessions.owner, sql.placeholder('owner'))).prepare();
  const spentSince = db
    .select({ input: sum(agentUsage.inputTokens), output: sum(agentUsage.outputTokens) })
    .from(agentUsage)
    .where(and(eq(agentUsage.actor, sql.placeholder('actor')), gte(agentUsage.at, sql.placeholder('since'))))
    .prepare();
  const messageCount = sql<number>`(SELECT count(*) FROM "agent_messages" m WHERE m."session_id" = "agent_sessions"."id")`;

  return {
    session: (id: string): AgentSessionRow | undefined => byId.get({ id }),

    list(owner: string | null, workspaceId?: string): (AgentSessionRow & { messageCount: number })[] {
      const rows = db
        .select({ s: agentSessions, messageCount })
        .from(agentSessions)
        .where(and(owner === null ? undefined : eq(agentSessions.owner, owner), workspaceId === undefined ? undefined : eq(agentSessions.workspaceId, workspaceId)))
        .orderBy(asc(agentSessions.createdAt), asc(agentSessions.id))
        .all();
      return rows.map((r) => ({ ...r.s, messageCount: Number(r.messageCount) }));
    },

    insertSession(row: AgentSessionRow) {
      db.insert(agentSessions).values(row).run();
    },

    /** Sessions `owner` holds. */
    sessionCount: (owner: string): number => sessionsOf.get({ owner })?.n ?? 0,

    /** One turn's tokens, counted against its actor. */
    recordUsage(row: AgentUsageRow) {
      db.insert(agentUsage).values(row).run();
    },

    /** Tokens (input + output) `actor` spent from `since` (ISO time) on, over all sessions. */
    tokensSince(actor: string, since: string): number {
      const r = spentSince.get({ actor, since });
      return Number(r?.input ?? 0) + Number(r?.output ?? 0);
    },

    deleteSession(id: string) {
      db.delete(agentSessions).where(eq(agentSessions.id, id)).run();
    },

    messages: (sessionId: string): AgentMessageRow[] => messagesOf.all({ sessionId }),

    messageCount: (sessionId: string): number =>
      db.select({ n: count() }).from(agentMessages).where(eq(agentMessages.sessionId, sessionId)).get()?.n ?? 0,

    /** The user message and the (empty, running) assistant message of a new turn, together. */
    insertTurn(user: AgentMessageRow, assistant: AgentMessageRow) {
      db.transaction(() => {
        insertMessage.run(user);
        insertMessage.run(assistant);
      });
    },

    /** What a running turn has said so far (at each tool result and step end). */
    saveProgress(messageId: string, p: { content: string; toolCalls: string; parts: string; usage: Usage }) {
      db.update(agentMessages)
        .set({ content: p.content, toolCalls: p.toolCalls, parts: p.parts, promptTokens: p.usage.promptTokens, completionTokens: p.usage.completionTokens, totalTokens: p.usage.totalTokens })
        .where(eq(agentMessages.id, messageId))
        .run();
    },

    /** Ends a turn in one transaction: the reply, the session's totals and the last event. */
    finishTurn(
      sessionId: string,
      messageId: string,
      p: { content: string; toolCalls: string; parts: string; usage: Usage; finishReason: string },
      last: { seq: number; event: AgentEvent['event']; data: string },
      at: string,
    ) {
      db.transaction((tx) => {
        tx.update(agentMessages)
          .set({
            content: p.content,
            toolCalls: p.toolCalls,
            parts: p.parts,
            finishReason: p.finishReason,
            promptTokens: p.usage.promptTokens,
            completionTokens: p.usage.completionTokens,
            totalTokens: p.usage.totalTokens,
          })
          .where(eq(agentMessages.id, messageId))
          .run();
        tx.update(agentSessions)
          .set({
            promptTokens: sql`${agentSessions.promptTokens} + ${p.usage.promptTokens}`,
            completionTokens: sql`${agentSessions.completionTokens} + ${p.usage.completionTokens}`,
            totalTokens: sql`${agentSessions.totalTokens} + ${p.usage.totalTokens}`,
            updatedAt: at,
          })
          .where(eq(agentSessions.id, sessionId))
          .run();
        tx.insert(agentEvents).values({ sessionId, seq: last.seq, event: last.event, data: last.data, createdAt: at }).run();
      });
    },

    appendEvent(sessionId: string, seq: number, event: AgentEvent['event'], data: string, createdAt: string) {
      insertEvent.run({ sessionId, seq, event, data, createdAt });
    },

    eventsAfter(sessionId: string, after: number, limit = EVENT_PAGE): AgentEvent[] {
      return eventsAfter.all({ sessionId, after, limit }).map((r) => ({ id: r.seq, event: r.event, data: JSON.parse(r.data) }));
    },

    lastEventId: (sessionId: string): number => lastSeq.get({ sessionId })?.seq ?? 0,

    setStatus(sessionId: string, status: AgentSessionRow['status']) {
      db.update(agentSessions).set({ status }).where(eq(agentSessions.id, sessionId)).run();
    },

    insertApproval(row: AgentApprovalRow) {
      db.insert(agentApprovals).values(row).run();
    },

    approval: (id: string): AgentApprovalRow | undefined => db.select().from(agentApprovals).where(eq(agentApprovals.id, id)).get(),

    /** The session's approvals, oldest first; `pending` only when asked. */
    approvals: (sessionId: string, pendingOnly = false): AgentApprovalRow[] =>
      db
        .select()
        .from(agentApprovals)
        .where(and(eq(agentApprovals.sessionId, sessionId), pendingOnly ? eq(agentApprovals.status, 'pending') : undefined))
        .orderBy(asc(agentApprovals.createdAt), asc(agentApprovals.id))
        .all(),

    /** Decides a pending approval; false when it was decided already (the first decision wins). */
    decideApproval(id: string, d: { status: 'approved' | 'denied'; reason: string | null; decidedBy: string; decidedAt: string }): boolean {
      const changed = db
        .update(agentApprovals)
        .set(d)
        .where(and(eq(agentApprovals.id, id), eq(agentApprovals.status, 'pending')))
        .returning({ id: agentApprovals.id })
        .all();
      return changed.length > 0;
    },

    /** Tokens by model that `actor` (all actors: null) spent in [from, to). */
    tokensByModel(actor: string | null, from: string, to: string) {
      return db
        .select({ model: agentUsage.model, input: sum(agentUsage.inputTokens), output: sum(agentUsage.outputTokens) })
        .from(agentUsage)
        .where(and(actor === null ? undefined : eq(agentUsage.actor, actor), gte(agentUsage.at, from), lt(agentUsage.at, to)))
        .groupBy(agentUsage.model)
        .all()
        .map((r) => ({ model: r.model, input: Number(r.input ?? 0), output: Number(r.output ?? 0) }));
    },

    /** Assistant messages whose turn never ended: Keel stopped (or crashed) while they ran. */
    unfinishedTurns: (): AgentMessageRow[] =>
      db.select().from(agentMessages).where(and(eq(agentMessages.role, 'assistant'), isNull(agentMessages.finishReason))).all(),
  };
}

export type AgentStore = ReturnType<typeof createAgentStore>;
