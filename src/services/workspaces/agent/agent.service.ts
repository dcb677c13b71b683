// Agent sessions and their rules: who may see them, create (MCP servers checked, the session quota),
// list, get (with the turn in flight as far as it went), delete, send (a turn admitted under the
// daily token limit, its two messages stored), cancel, and the decisions on tool calls. No HTTP here;
// running a turn is the turn runner's job (turn-runner.ts), and followers get an AsyncIterable of events.
import { WorkspaceErrors } from '../workspaces.errors';
import { canAccess, type Actor } from '../../../platform/auth/workspace-token';
import { isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import type { TargetPolicy } from '../../../platform/net/address-policy';
import type { Access } from '../access';
import type { Quotas } from '../quotas';
import type { AgentConfig } from './agent.config';
import type { AgentEvent, Approval, CreateSessionInput, DecisionInput, Message, Session, SessionListEntry } from './agent.model';
import type { AgentRepository } from './agent.repository';
import type { AgentMessageRow, AgentSessionRow } from './agent.tables';
import { createApprovals, parsePolicy } from './approvals';
import { checkMcpServers } from './mcp-client';
import type { Providers } from './providers/providers';
import type { WorkspaceFiles, WorkspaceShell } from './tools';
import { createAgentUsage } from './agent.usage';
import type { LiveTurn } from './agent.live';
import { createTurnRunner, usageOf, type AdmittedTurn, type StartedTurn } from './turn-runner';

export interface AgentServiceDeps {
  repository: AgentRepository;
  providers: Providers;
  shell: WorkspaceShell;
  /** The files feature: read_file, write_file and list_directory stream through it. */
  files: WorkspaceFiles;
  access: Pick<Access, 'getOwned'>;
  /** A turn, and a stream following a session's events, hold one of the actor's stream slots. */
  quotas: Pick<Quotas, 'take' | 'holdingStream'>;
  config: AgentConfig;
  clock: Clock;
  log: Logger;
  /** Aborted when Keel begins to stop: turns end at once as `interrupted` (requests waiting on them answer). */
  shutdown: AbortSignal;
  /** Where a session's MCP servers may be: the webhook targets' rules. */
  mcpPolicy: TargetPolicy;
}

const notFound = () => WorkspaceErrors.SESSION_NOT_FOUND('agent session not found');

export function createAgentService(deps: AgentServiceDeps) {
  const { repository, clock, config } = deps;
  const usage = createAgentUsage({ repository, clock, config, log: deps.log });
  const approvals = createApprovals({ repository, clock, timeoutMs: config.approvalTimeoutMs, log: deps.log });
  const turns = createTurnRunner({ ...deps, usage, approvals });

  async function owned(actor: Actor, id: string): Promise<AgentSessionRow> {
    const row = await repository.session(id);
    if (!row || !canAccess(actor, row.owner)) throw notFound();
    return row;
  }

  /**
   * The daily token check and the turn's two messages in one transaction under the actor's lock.
   * Tokens of the actor's turns in flight count too: they are spent, only not stored yet.
   */
  async function admitTurn(actor: Actor, id: string, message: string): Promise<AdmittedTurn> {
    const at = isoNow(clock);
    const messageId = newId('msg', clock);
    const userId = newId('msg', clock);
    return usage.admitTurn(actor, turns.tokensInFlight(actor.id), async (tx) => {
      const history = await repository.messages(id, tx);
      const afterEventId = await repository.lastEventId(id, tx);
      const base = { sessionId: id, finishReason: null, toolCalls: null, parts: null, promptTokens: null, completionTokens: null, totalTokens: null, createdAt: at };
      await repository.insertTurn(
        { ...base, id: userId, ordinal: history.length, role: 'user', content: message, afterEventId: null },
        { ...base, id: messageId, ordinal: history.length + 1, role: 'assistant', content: '', afterEventId },
        tx,
      );
      return { messageId, afterEventId, history };
    });
  }

  return {
    async create(actor: Actor, input: CreateSessionInput): Promise<Session> {
      deps.providers.check(input.model);
      await deps.access.getOwned(actor, input.workspaceId);
      checkMcpServers(input.mcpServers ?? [], deps.mcpPolicy);
      const at = isoNow(clock);
      const context = input.context ?? {};
      const row: AgentSessionRow = {
        id: newId('ses', clock),
        owner: actor.id,
        workspaceId: input.workspaceId,
        model: input.model,
        context: JSON.stringify(context),
        status: 'active',
        toolApproval: JSON.stringify(input.toolApproval ?? 'never'),
        mcpServers: JSON.stringify(input.mcpServers ?? []),
        promptTokens: 0,
        completionTokens: 0,
        totalTokens: 0,
        createdAt: at,
        updatedAt: at,
      };
      // Counted and inserted in one transaction under the actor's lock: concurrent creates cannot overshoot.
      await usage.admitSession(actor, (tx) => repository.insertSession(row, tx));
      return { ...sessionView(row, undefined, 0), context, messages: [] };
    },

    async list(actor: Actor, filter: { workspaceId?: string } = {}): Promise<SessionListEntry[]> {
      const rows = await repository.list(actor.admin ? null : actor.id, filter.workspaceId);
      return rows.map((r) => ({ ...sessionView(r, turns.live(r.id), r.lastEventId), messageCount: r.messageCount }));
    },

    async get(actor: Actor, id: string): Promise<Session> {
      const row = await owned(actor, id);
      // Looked up before the reads: a turn that ends meanwhile is shown with what it said in memory.
      const live = turns.live(id);
      const [messages, storedLast] = await Promise.all([repository.messages(id), repository.lastEventId(id)]);
      return { ...sessionView(row, live, storedLast), context: JSON.parse(row.context), messages: messages.map((m) => messageView(m, live)) };
    },

    async remove(actor: Actor, id: string): Promise<{ id: string; deleted: true }> {
      await owned(actor, id);
      await turns.stop(id, 'cancelled');
      await repository.deleteSession(id);
      return { id, deleted: true };
    },

    /**
     * Starts a turn and answers at once: `result` settles when it ends, `follow` yields its events from
     * the first. The turn runs to its end whoever listens (a client that leaves stops nothing).
     * Every turn, streaming or not, holds one of the actor's stream slots, taken before it starts (a
     * refused one, 429, starts nothing) and given back once it has ended and `stream` (the signal of
     * the stream that follows it, if one does) has aborted: a client that leaves does not stop the
     * turn, so it does not free the slot either.
     */
    async send(actor: Actor, id: string, message: string, stream?: AbortSignal): Promise<StartedTurn> {
      const slot = deps.quotas.take(actor, 'streams');
      let turn: StartedTurn;
      try {
        const row = await owned(actor, id);
        deps.providers.check(row.model);
        turn = await turns.start(actor, row, message, () => admitTurn(actor, id, message));
      } catch (e) {
        slot.release();
        throw e;
      }
      const closed = stream && new Promise<void>((resolve) => (stream.aborted ? resolve() : stream.addEventListener('abort', () => resolve(), { once: true })));
      void Promise.all([turn.result, closed]).finally(slot.release);
      return turn;
    },

    /**
     * The session's events after `after`, then the turn in flight until its end (at once when none),
     * holding one of the actor's stream slots until `signal` aborts (429 first when none is left).
     */
    events(actor: Actor, id: string, after: number, signal: AbortSignal): Promise<AsyncIterable<AgentEvent>> {
      return deps.quotas.holdingStream(actor, signal, async () => {
        await owned(actor, id);
        return turns.follow(id, after, signal);
      });
    },

    async cancel(actor: Actor, id: string): Promise<{ id: string; cancelled: boolean }> {
      await owned(actor, id);
      return { id, cancelled: await turns.stop(id, 'cancelled') };
    },

    /** Closes (or takes up again, when paused for approval) the turns a stop or crash of Keel cut short. */
    recover: turns.recover,

    /** What waits for a decision in the session (`all`: decided ones too). */
    async approvals(actor: Actor, id: string, all: boolean): Promise<Approval[]> {
      await owned(actor, id);
      return approvals.list(id, all);
    },

    async decide(actor: Actor, id: string, aid: string, input: DecisionInput): Promise<Approval> {
      await owned(actor, id);
      return approvals.decide(id, aid, actor.id, input);
    },

    /** Shutdown: every turn in flight ends now as `interrupted`, stored before the database closes. */
    close: turns.close,

    /** Turns in flight (for tests and operators). */
    get active() {
      return turns.active;
    },
  };
}

export type AgentService = ReturnType<typeof createAgentService>;

/** A session as the API shows it; `live`: its turn in flight, if any; `storedLast`: its last stored event id (shown when none). */
function sessionView(row: AgentSessionRow, live: LiveTurn | undefined, storedLast: number) {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    model: row.model,
    status: row.status,
    toolApproval: parsePolicy(row.toolApproval),
    mcpServers: (JSON.parse(row.mcpServers) as { name: string; url: string }[]).map(({ name, url }) => ({ name, url })),
    createdAt: row.createdAt,
    usage: { promptTokens: row.promptTokens, completionTokens: row.completionTokens, totalTokens: row.totalTokens },
    busy: !!live,
    // A turn in flight: the last event handed to its followers.
    lastEventId: live ? (live.events.at(-1)?.id ?? live.afterEventId) : storedLast,
  };
}

/** A message as the API shows it: the running turn's assistant message as far as it went in memory. */
function messageView(m: AgentMessageRow, live: LiveTurn | undefined): Message {
  const base = { id: m.id, role: m.role, content: m.content, timestamp: m.createdAt };
  if (m.role === 'user') return base;
  const running = live?.messageId === m.id ? live : undefined;
  return {
    ...base,
    content: running ? running.content : m.content,
    finishReason: m.finishReason,
    usage: running ? { ...running.usage } : usageOf(m),
    toolCalls: running ? [...running.toolCalls] : m.toolCalls ? JSON.parse(m.toolCalls) : [],
  };
}
