// Every query of the agent feature, on the platform Store (SQLite or PostgreSQL), its tables resolved
// once. A turn's events reach it through the turn's one writer (turn-runner.ts), in their order; a
// follower is handed an event only once it is stored, so what a client saw is what is stored.
import { and, asc, count, desc, eq, gt, gte, isNull, lt, sql, sum } from 'drizzle-orm';
import type { Orm, Store } from '../../../platform/store';
import { agentTables, type AgentApprovalRow, type AgentMessageRow, type AgentSessionRow, type AgentUsageRow } from './agent.tables';
import type { AgentEvent, Usage } from './agent.model';

export const EVENT_PAGE = 500;

/** What a running turn has said so far, as stored on its assistant message. */
export interface TurnSnapshot {
  content: string;
  /** Left out: the stored ones stand (they did not change since). */
  toolCalls?: string;
  parts?: string;
  usage: Usage;
}

/** An event as stored: its data already JSON. */
export interface StoredEvent {
  seq: number;
  event: AgentEvent['event'];
  data: string;
}

export function createAgentRepository(store: Store) {
  const db = store.orm;
  const { agentApprovals, agentEvents, agentMessages, agentSessions, agentUsage } = agentTables(store.dialect);
  const first = async <T>(q: Promise<T[]>): Promise<T | undefined> => (await q)[0];
  // Spelled out: inside a subquery drizzle would leave the outer column unqualified. Valid on both databases.
  const messageCount = sql<number>`(SELECT count(*) FROM "agent_messages" m WHERE m."session_id" = "agent_sessions"."id")`;
  const lastSeq = sql<number>`(SELECT coalesce(max(e."seq"), 0) FROM "agent_events" e WHERE e."session_id" = "agent_sessions"."id")`;
  const progressFields = (p: TurnSnapshot) => ({
    content: p.content,
    ...(p.toolCalls !== undefined ? { toolCalls: p.toolCalls } : {}),
    ...(p.parts !== undefined ? { parts: p.parts } : {}),
    promptTokens: p.usage.promptTokens,
    completionTokens: p.usage.completionTokens,
    totalTokens: p.usage.totalTokens,
  });

  return {
    session: (id: string, tx: Orm = db): Promise<AgentSessionRow | undefined> => first(tx.select().from(agentSessions).where(eq(agentSessions.id, id))),

    /** The sessions of `owner` (all: null), oldest first, with their message count and last event id. */
    async list(owner: string | null, workspaceId?: string): Promise<(AgentSessionRow & { messageCount: number; lastEventId: number })[]> {
      const rows = await db
        .select({ s: agentSessions, messageCount, lastSeq })
        .from(agentSessions)
        .where(and(owner === null ? undefined : eq(agentSessions.owner, owner), workspaceId === undefined ? undefined : eq(agentSessions.workspaceId, workspaceId)))
        .orderBy(asc(agentSessions.createdAt), asc(agentSessions.id));
      return rows.map((r) => ({ ...r.s, messageCount: Number(r.messageCount), lastEventId: Number(r.lastSeq) }));
    },

    async insertSession(row: AgentSessionRow, tx: Orm = db) {
      await tx.insert(agentSessions).values(row);
    },

    /**
     * Runs `body` in a transaction holding `actor`'s agent quota lock (Store.lock): a quota counted from
     * the tables and the write it guards, which concurrent requests must not interleave.
     */
    underQuotaLock<T>(actor: string, body: (tx: Orm) => Promise<T>): Promise<T> {
      return store.transaction(async (tx) => {
        await store.lock(tx, `agent-quota:${actor}`);
        return body(tx);
      });
    },

    /** Sessions `owner` holds. */
    sessionCount: async (owner: string, tx: Orm = db): Promise<number> =>
      Number((await first(tx.select({ n: count() }).from(agentSessions).where(eq(agentSessions.owner, owner))))?.n ?? 0),

    /** One turn's tokens, counted against its actor. */
    async recordUsage(row: AgentUsageRow) {
      await db.insert(agentUsage).values(row);
    },

    /** Tokens (input + output) `actor` spent from `since` (ISO time) on, over all sessions. */
    async tokensSince(actor: string, since: string, tx: Orm = db): Promise<number> {
      const r = await first(
        tx
          .select({ input: sum(agentUsage.inputTokens), output: sum(agentUsage.outputTokens) })
          .from(agentUsage)
          .where(and(eq(agentUsage.actor, actor), gte(agentUsage.at, since))),
      );
      return Number(r?.input ?? 0) + Number(r?.output ?? 0);
    },

    async deleteSession(id: string) {
      await db.delete(agentSessions).where(eq(agentSessions.id, id));
    },

    messages: (sessionId: string, tx: Orm = db): Promise<AgentMessageRow[]> =>
      tx.select().from(agentMessages).where(eq(agentMessages.sessionId, sessionId)).orderBy(asc(agentMessages.ordinal)),

    /** The user message and the (empty, running) assistant message of a new turn, together (one statement). */
    async insertTurn(user: AgentMessageRow, assistant: AgentMessageRow, tx: Orm = db) {
      await tx.insert(agentMessages).values([user, assistant]);
    },

    /** What a running turn has said so far (at each tool result and step end). */
    async saveProgress(messageId: string, p: TurnSnapshot) {
      await db.update(agentMessages).set(progressFields(p)).where(eq(agentMessages.id, messageId));
    },

    /** Ends a turn in one transaction: the reply, the session's totals and the last event. */
    finishTurn(sessionId: string, messageId: string, p: TurnSnapshot & { finishReason: string }, last: StoredEvent, at: string): Promise<void> {
      return store.transaction(async (tx) => {
        await tx
          .update(agentMessages)
          .set({ ...progressFields(p), finishReason: p.finishReason })
          .where(eq(agentMessages.id, messageId));
        await tx
          .update(agentSessions)
          .set({
            promptTokens: sql`${agentSessions.promptTokens} + ${p.usage.promptTokens}`,
            completionTokens: sql`${agentSessions.completionTokens} + ${p.usage.completionTokens}`,
            totalTokens: sql`${agentSessions.totalTokens} + ${p.usage.totalTokens}`,
            updatedAt: at,
          })
          .where(eq(agentSessions.id, sessionId));
        await tx.insert(agentEvents).values({ sessionId, seq: last.seq, event: last.event, data: last.data, createdAt: at });
      });
    },

    /** Events of one session, in their order (one statement: all or none). */
    async appendEvents(sessionId: string, events: (StoredEvent & { createdAt: string })[]) {
      if (events.length) await db.insert(agentEvents).values(events.map((e) => ({ sessionId, seq: e.seq, event: e.event, data: e.data, createdAt: e.createdAt })));
    },

    async eventsAfter(sessionId: string, after: number, limit = EVENT_PAGE): Promise<AgentEvent[]> {
      const rows = await db
        .select()
        .from(agentEvents)
        .where(and(eq(agentEvents.sessionId, sessionId), gt(agentEvents.seq, after)))
        .orderBy(asc(agentEvents.seq))
        .limit(limit);
      return rows.map((r) => ({ id: r.seq, event: r.event, data: JSON.parse(r.data) }));
    },

    lastEventId: async (sessionId: string, tx: Orm = db): Promise<number> =>
      (await first(tx.select({ seq: agentEvents.seq }).from(agentEvents).where(eq(agentEvents.sessionId, sessionId)).orderBy(desc(agentEvents.seq)).limit(1)))?.seq ?? 0,

    async setStatus(sessionId: string, status: AgentSessionRow['status']) {
      await db.update(agentSessions).set({ status }).where(eq(agentSessions.id, sessionId));
    },

    async insertApproval(row: AgentApprovalRow) {
      await db.insert(agentApprovals).values(row);
    },

    approval: (id: string): Promise<AgentApprovalRow | undefined> => first(db.select().from(agentApprovals).where(eq(agentApprovals.id, id))),

    /** The session's approvals, oldest first; `pending` only when asked. */
    approvals: (sessionId: string, pendingOnly = false): Promise<AgentApprovalRow[]> =>
      db
        .select()
        .from(agentApprovals)
        .where(and(eq(agentApprovals.sessionId, sessionId), pendingOnly ? eq(agentApprovals.status, 'pending') : undefined))
        .orderBy(asc(agentApprovals.createdAt), asc(agentApprovals.id)),

    /** Decides a pending approval; false when it was decided already (the first decision wins). */
    async decideApproval(id: string, d: { status: 'approved' | 'denied'; reason: string | null; decidedBy: string; decidedAt: string }): Promise<boolean> {
      const changed = await db
        .update(agentApprovals)
        .set(d)
        .where(and(eq(agentApprovals.id, id), eq(agentApprovals.status, 'pending')))
        .returning({ id: agentApprovals.id });
      return changed.length > 0;
    },

    /** Tokens by model that `actor` (all actors: null) spent in [from, to). */
    async tokensByModel(actor: string | null, from: string, to: string) {
      const rows = await db
        .select({ model: agentUsage.model, input: sum(agentUsage.inputTokens), output: sum(agentUsage.outputTokens) })
        .from(agentUsage)
        .where(and(actor === null ? undefined : eq(agentUsage.actor, actor), gte(agentUsage.at, from), lt(agentUsage.at, to)))
        .groupBy(agentUsage.model);
      return rows.map((r) => ({ model: r.model, input: Number(r.input ?? 0), output: Number(r.output ?? 0) }));
    },

    /** Assistant messages whose turn never ended: Keel stopped (or crashed) while they ran. */
    unfinishedTurns: (): Promise<AgentMessageRow[]> =>
      db
        .select()
        .from(agentMessages)
        .where(and(eq(agentMessages.role, 'assistant'), isNull(agentMessages.finishReason)))
        .orderBy(asc(agentMessages.createdAt), asc(agentMessages.id)),
  };
}

export type AgentRepository = ReturnType<typeof createAgentRepository>;
