// Agent sessions: who may see them, one turn at a time per session, the turn's events appended to the
// session's log as they happen and fanned out to whoever follows, cancel, limits, and the closing of
// turns that a stop or crash of Keel cut short. No HTTP here: followers get an AsyncIterable of events.
//
// Each turn has one writer (`flushSoon`): its events are numbered when they happen (`nextSeq`, here
// only), stored one batch after another in that order, and handed to followers once stored. So the
// log is always a gap-free prefix of the turn's events, and what a client saw is what is stored.
import { AppError, toEnvelope } from '../../../platform/errors';
import '../workspaces.errors';
import { canAccess, type Actor } from '../../../platform/auth/workspace-token';
import { isoNow, newId, type Clock, type Logger, errorFields } from '../../../platform/runtime';
import type { Access } from '../access';
import type { AgentConfig } from './agent.config';
import type { AgentContext, AgentEvent, Approval, AssistantReply, CreateSessionInput, DecisionInput, Message, Session, SessionListEntry, ToolCall, Usage } from './agent.model';
import { EVENT_PAGE, type AgentRepository } from './agent.repository';
import type { AgentMessageRow, AgentSessionRow } from './agent.tables';
import { readParts, runTurn, storedParts, systemPrompt, toModelMessages, zeroUsage, type StopReason, type TurnOutcome, type TurnProgress } from './agent.turn';
import { createApprovals, parsePolicy, SUSPENDED, withApproval } from './approvals';
import { checkMcpServers, connectMcpServers } from './mcp-client';
import type { TargetPolicy } from '../../../platform/net/address-policy';
import type { Providers } from './providers/providers';
import { workspaceTools, type TakeExecSlot, type WorkspaceFiles, type WorkspaceShell } from './tools';
import { createAgentUsage } from './agent.usage';
import { followEvents, replayTurn } from './agent.log';
import { newLiveTurn, type LiveTurn, type TurnEnd } from './agent.live';

export interface AgentServiceDeps {
  store: AgentRepository;
  providers: Providers;
  shell: WorkspaceShell;
  /** The files feature: read_file, write_file and list_directory stream through it. */
  files: WorkspaceFiles;
  /** An exec slot of the actor's quota for each command a tool runs. */
  takeExecSlot: TakeExecSlot;
  access: Pick<Access, 'getOwned'>;
  config: AgentConfig;
  clock: Clock;
  log: Logger;
  /** Aborted when Keel begins to stop: turns end at once as `interrupted` (requests waiting on them answer). */
  shutdown: AbortSignal;
  /** Where a session's MCP servers may be: the webhook targets' rules. */
  mcpPolicy: TargetPolicy;
}

const nextLoopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const notFound = () => new AppError('SESSION_NOT_FOUND', 'agent session not found');

export function createAgentService(deps: AgentServiceDeps) {
  const { store, clock, config } = deps;
  const turns = new Map<string, LiveTurn>();
  /** Sessions whose turn is being started (past the busy check, not yet in `turns`): busy too. */
  const starting = new Map<string, Promise<unknown>>();
  const usage = createAgentUsage({ store, clock, config, log: deps.log });
  const approvals = createApprovals({ store, clock, timeoutMs: config.approvalTimeoutMs, log: deps.log });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // A send past its checks starts its turn first; it is then stopped with the others.
      await Promise.allSettled(starting.values());
      const running = [...turns.values()];
      // A turn paused for approval stays paused: its calls are stored and it goes on after the restart.
      for (const live of running) live.controller.abort(live.awaiting ? SUSPENDED : ('interrupted' satisfies StopReason));
      await Promise.all(running.map((l) => l.result));
    })());
  deps.shutdown.addEventListener('abort', () => void close(), { once: true });

  async function owned(actor: Actor, id: string): Promise<AgentSessionRow> {
    const row = await store.session(id);
    if (!row || !canAccess(actor, row.owner)) throw notFound();
    return row;
  }

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

  /** `live`: the session's turn in flight, if any; `storedLast`: its last stored event id (shown when none). */
  function sessionFields(row: AgentSessionRow, live: LiveTurn | undefined, storedLast: number) {
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

  function wake(live: TurnEnd) {
    const w = live.wake;
    live.wake = undefined;
    w?.resolve();
  }

  /** Numbers one event now; the turn's writer appends it to the log, then hands it to the followers. */
  function emit(live: LiveTurn, event: 'delta' | 'tool' | 'approval', data: unknown) {
    const seq = live.nextSeq++;
    live.unstored.push({ event: { id: seq, event, data }, stored: { seq, event, data: JSON.stringify(data) }, at: isoNow(clock) });
    flushSoon(live);
  }

  /** What the turn has said so far, stored by the turn's writer (only the latest is kept waiting). */
  function saveProgress(live: LiveTurn, p: TurnProgress) {
    const { content } = p;
    const usage = { ...p.usage };
    const calls = callsOf(live, p);
    live.progress = () => ({ content, ...calls(), usage });
    flushSoon(live);
  }

  /**
   * The turn's tool calls and parts as JSON when they changed since they were last stored, else
   * nothing. A turn's progress is saved at every tool result and provider call
   * and once more at its end; a tool output of a megabyte serialised and bound again at each would
   * hold many copies at once (CONTRACT: no request grows Keel by more than 32 MiB).
   */
  function callsOf(live: Pick<LiveTurn, 'storedPartsKey'>, p: TurnProgress): () => { toolCalls?: string; parts?: string } {
    const decided = p.parts.reduce((n, x) => n + (x.type === 'approval' && x.decision ? 1 : 0), 0);
    const key = `${p.content.length}:${p.toolCalls.length}:${p.parts.length}:${decided}`;
    const { toolCalls, parts } = p;
    return () => {
      if (key === live.storedPartsKey) return {};
      live.storedPartsKey = key;
      return { toolCalls: JSON.stringify(toolCalls), parts: storedParts(parts) };
    };
  }

  /**
   * Chains one flush on the turn's writes, unless one is chained and has not begun. It begins at the
   * event loop's next turn: the deltas that arrive together (one read of the provider's stream) are
   * stored in one insert, which on SQLite is most of the cost of an event.
   */
  function flushSoon(live: LiveTurn) {
    if (live.flushQueued) return;
    live.flushQueued = true;
    live.writes = live.writes.then(nextLoopTurn).then(() => flush(live));
  }

  /** Stores what waits (events in order, then progress), then hands the events to the followers. Never rejects. */
  async function flush(live: LiveTurn) {
    live.flushQueued = false;
    const batch = live.unstored.splice(0, EVENT_PAGE);
    if (live.unstored.length) flushSoon(live);
    const progress = live.progress;
    live.progress = undefined;
    try {
      await store.appendEvents(live.sessionId, batch.map((u) => ({ ...u.stored, createdAt: u.at })));
    } catch (e) {
      // Followers still get them; a crash before the turn's end would lose them from the log.
      deps.log.warn('agent events not stored', { session: live.sessionId, count: batch.length, ...errorFields(e) });
    }
    if (progress) {
      await store.saveProgress(live.messageId, progress()).catch((e) => deps.log.warn('agent turn progress not stored', { session: live.sessionId, ...errorFields(e) }));
    }
    if (batch.length) {
      for (const u of batch) live.events.push(u.event);
      wake(live);
    }
  }

  /** Waits until the turn's writer has stored everything chained so far. */
  async function written(live: Pick<LiveTurn, 'writes'>) {
    for (let w = live.writes; ; w = live.writes) {
      await w;
      if (w === live.writes) return;
    }
  }

  async function execute(live: LiveTurn, row: AgentSessionRow, actor: Actor, message: string, history: AgentMessageRow[], resume?: TurnProgress) {
    const budget = config.maxSessionTokens - row.totalTokens;
    let outcome: TurnOutcome;
    if (budget <= 0 && !resume) {
      // The session has spent its tokens: the turn ends at once, without a provider call.
      outcome = { content: '', toolCalls: [], parts: [], usage: zeroUsage(), finishReason: 'token-limit' };
    } else {
      // The turn's time limit counts the time it runs, not the time a person takes to decide.
      let left = config.turnTimeoutMs;
      let since = clock.now();
      let timer: Timer | undefined;
      const arm = () => {
        since = clock.now();
        timer = setTimeout(() => live.controller.abort('time-limit' satisfies StopReason), Math.max(0, left));
      };
      arm();
      const mcp = await connectMcpServers(JSON.parse(row.mcpServers), deps.mcpPolicy, config.mcpTimeoutMs);
      try {
        outcome = await runTurn(deps.providers, {
          model: row.model,
          system: systemPrompt(row.workspaceId, JSON.parse(row.context) as AgentContext, mcp.notes),
          history: toModelMessages(history),
          message,
          tools: withApproval({ ...mcp.tools, ...workspaceTools(deps.shell, deps.files, deps.takeExecSlot, actor, row.workspaceId) }, parsePolicy(row.toolApproval)),
          resume,
          async awaitDecisions(calls) {
            clearTimeout(timer);
            left -= clock.now() - since;
            live.awaiting = true;
            try {
              return await approvals.wait({ sessionId: live.sessionId, messageId: live.messageId, signal: live.controller.signal }, calls, (a) => emit(live, 'approval', a));
            } finally {
              live.awaiting = false;
              arm();
            }
          },
          maxSteps: config.maxSteps,
          tokenBudget: budget,
          maxRetries: config.providerRetries,
          providerIdleTimeoutMs: config.providerTimeoutMs,
          signal: live.controller.signal,
          onDelta(text) {
            live.content += text;
            emit(live, 'delta', { content: text });
          },
          onTool(call) {
            live.toolCalls.push(call);
            emit(live, 'tool', call);
          },
          onProgress(p) {
            live.usage = { ...p.usage };
            saveProgress(live, p);
          },
        });
      } finally {
        clearTimeout(timer);
        await mcp.close();
      }
    }
    if (live.controller.signal.reason === SUSPENDED) return suspend(live, outcome);
    return finish(live, outcome);
  }

  /**
   * Keel stops while the turn waits for approval: nothing ends, the stored parts and pending calls are
   * taken up again at start-up. A request waiting on the turn answers 503; a stream just closes.
   */
  async function suspend(live: LiveTurn, o: TurnOutcome) {
    saveProgress(live, o);
    await written(live);
    live.ended = true;
    turns.delete(live.sessionId);
    wake(live);
    const reply: AssistantReply = { id: live.messageId, role: 'assistant', content: o.content, finishReason: 'interrupted', usage: o.usage, toolCalls: o.toolCalls };
    return { reply, error: new AppError('SHUTTING_DOWN', 'Keel is stopping; the turn waits for approval and goes on once Keel is back') };
  }

  /**
   * Stores the turn's end (reply, totals, last event) in one transaction, after everything the turn
   * said before, then releases the session.
   */
  async function finish(live: TurnEnd, o: TurnOutcome) {
    // The end's own write below stores the whole reply: progress still waiting would only be written
    // (and a megabyte tool output serialised) once more just before it.
    live.progress = undefined;
    await written(live);
    const reply: AssistantReply = { id: live.messageId, role: 'assistant', content: o.content, finishReason: o.finishReason, usage: o.usage, toolCalls: o.toolCalls };
    await usage.record(live, o.usage);
    const last: AgentEvent = o.error ? { id: live.nextSeq++, event: 'error', data: toEnvelope(o.error) } : { id: live.nextSeq++, event: 'done', data: reply };
    try {
      await store.finishTurn(
        live.sessionId,
        live.messageId,
        { content: o.content, ...callsOf(live, o)(), usage: o.usage, finishReason: o.finishReason },
        { seq: last.id, event: last.event, data: JSON.stringify(last.data) },
        isoNow(clock),
      );
    } catch (e) {
      // The session was deleted meanwhile (or the database is closing): followers still get the end.
      deps.log.warn('agent turn end not stored', { session: live.sessionId, ...errorFields(e) });
    }
    live.events.push(last);
    live.ended = true;
    turns.delete(live.sessionId);
    wake(live);
    return { reply, error: o.error };
  }

  /** Closes the turns that were running when Keel last stopped: their stored content kept, `interrupted`. */
  async function recover() {
    for (const m of await store.unfinishedTurns()) {
      if ((await approvals.pendingMessages(m.sessionId)).has(m.id)) {
        await resumePaused(m);
        continue;
      }
      const { content, toolCalls, parts } = await replayTurn(store, m.sessionId, m.afterEventId ?? 0);
      // The caller of a cut-short turn is not stored: its tokens count against the session's owner.
      const session = await store.session(m.sessionId);
      const nextSeq = (await store.lastEventId(m.sessionId)) + 1;
      const end: TurnEnd = { sessionId: m.sessionId, actor: session?.owner ?? '', model: session?.model ?? '', messageId: m.id, nextSeq, events: [], ended: false, writes: Promise.resolve() };
      await finish(end, { content, toolCalls, parts, usage: usageOf(m), finishReason: 'interrupted' });
      deps.log.warn('agent turn interrupted by a restart, closed', { session: m.sessionId, message: m.id });
    }
  }

  /** A turn paused for approval when Keel stopped: live again, waiting on the same stored calls. */
  async function resumePaused(m: AgentMessageRow) {
    const row = (await store.session(m.sessionId))!;
    const all = await store.messages(m.sessionId);
    const user = all.find((x) => x.ordinal === m.ordinal - 1)!;
    const history = all.filter((x) => x.ordinal < user.ordinal);
    const toolCalls: ToolCall[] = m.toolCalls ? JSON.parse(m.toolCalls) : [];
    const progress: TurnProgress = { content: m.content, toolCalls, parts: m.parts ? readParts(m.parts, toolCalls) : [], usage: usageOf(m) };
    // Its live events start after the stored log (followers read the earlier ones from the table).
    const last = await store.lastEventId(m.sessionId);
    const live = startLive(m.sessionId, row.owner, row.model, m.id, last, last + 1, progress);
    // Its caller is not stored: the session's owner acts (tools, quotas) for the rest of the turn.
    run(live, row, { id: row.owner, admin: false }, user.content, history, progress);
    deps.log.info('agent turn waiting for approval taken up again', { session: m.sessionId, message: m.id });
  }

  function startLive(...args: Parameters<typeof newLiveTurn>): LiveTurn {
    const live = newLiveTurn(...args);
    turns.set(live.sessionId, live);
    return live;
  }

  function run(live: LiveTurn, row: AgentSessionRow, actor: Actor, message: string, history: AgentMessageRow[], resume?: TurnProgress) {
    live.result = execute(live, row, actor, message, history, resume).catch((e) => {
      deps.log.error('agent turn failed unexpectedly', { session: live.sessionId, ...errorFields(e) });
      return finish(live, { content: live.content, toolCalls: live.toolCalls, parts: [], usage: live.usage, finishReason: 'error', error: new AppError('INTERNAL_ERROR', 'the turn failed inside Keel') });
    });
  }

  /**
   * A turn of `row`'s session: the daily token check and the turn's two messages in one transaction
   * under the actor's lock, then the turn runs. The session is marked `starting` by the caller.
   */
  async function startTurn(actor: Actor, row: AgentSessionRow, message: string) {
    const id = row.id;
    // Tokens of the actor's turns in flight count too: they are spent, only not stored yet.
    let inFlight = 0;
    for (const t of turns.values()) if (t.actor === actor.id) inFlight += t.usage.totalTokens;
    const at = isoNow(clock);
    const messageId = newId('msg', clock);
    const userId = newId('msg', clock);
    const { history, afterEventId } = await usage.admitTurn(actor, inFlight, async (tx) => {
      const history = await store.messages(id, tx);
      const afterEventId = await store.lastEventId(id, tx);
      const base = { sessionId: id, finishReason: null, toolCalls: null, parts: null, promptTokens: null, completionTokens: null, totalTokens: null, createdAt: at };
      await store.insertTurn(
        { ...base, id: userId, ordinal: history.length, role: 'user', content: message, afterEventId: null },
        { ...base, id: messageId, ordinal: history.length + 1, role: 'assistant', content: '', afterEventId },
        tx,
      );
      return { history, afterEventId };
    });
    const live = startLive(id, actor.id, row.model, messageId, afterEventId, afterEventId + 1);
    run(live, row, actor, message, history);
    return { result: live.result, follow: (signal: AbortSignal) => followEvents(store, id, afterEventId, live, signal) };
  }

  /** Waits for a turn of session `id` being started now (if any) to be in `turns`, or to have failed. */
  async function startedTurn(id: string) {
    await starting.get(id)?.catch(() => undefined);
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
      await usage.admitSession(actor, (tx) => store.insertSession(row, tx));
      return { ...sessionFields(row, undefined, 0), context, messages: [] };
    },

    async list(actor: Actor, filter: { workspaceId?: string } = {}): Promise<SessionListEntry[]> {
      const rows = await store.list(actor.admin ? null : actor.id, filter.workspaceId);
      return rows.map((r) => ({ ...sessionFields(r, turns.get(r.id), r.lastEventId), messageCount: r.messageCount }));
    },

    async get(actor: Actor, id: string): Promise<Session> {
      const row = await owned(actor, id);
      // Looked up before the reads: a turn that ends meanwhile is shown with what it said in memory.
      const live = turns.get(id);
      const [messages, storedLast] = await Promise.all([store.messages(id), store.lastEventId(id)]);
      return { ...sessionFields(row, live, storedLast), context: JSON.parse(row.context), messages: messages.map((m) => messageView(m, live)) };
    },

    async remove(actor: Actor, id: string): Promise<{ id: string; deleted: true }> {
      await owned(actor, id);
      await startedTurn(id);
      const live = turns.get(id);
      if (live) {
        live.controller.abort('cancelled' satisfies StopReason);
        await live.result;
      }
      await store.deleteSession(id);
      return { id, deleted: true };
    },

    /**
     * Starts a turn and answers at once: `result` settles when it ends, `follow` yields its events from
     * the first. The turn runs to its end whoever listens (a client that leaves stops nothing).
     */
    async send(actor: Actor, id: string, message: string): Promise<{ result: LiveTurn['result']; follow(signal: AbortSignal): AsyncIterable<AgentEvent> }> {
      const row = await owned(actor, id);
      deps.providers.check(row.model);
      if (closing) throw new AppError('SHUTTING_DOWN', 'Keel is shutting down; send the message again once it is back');
      if (turns.has(id) || starting.has(id)) throw new AppError('SESSION_BUSY', 'a turn is in flight in this session; wait for its done event or cancel it', { sessionId: id });
      // Marked busy in the same step as the check: a second send now is 409 until this one has started or failed.
      const started = startTurn(actor, row, message);
      starting.set(id, started);
      try {
        return await started;
      } finally {
        starting.delete(id);
      }
    },

    /** The session's events after `after`, then the turn in flight until its end (at once when none). */
    async events(actor: Actor, id: string, after: number, signal: AbortSignal): Promise<AsyncIterable<AgentEvent>> {
      await owned(actor, id);
      return followEvents(store, id, after, turns.get(id), signal);
    },

    async cancel(actor: Actor, id: string): Promise<{ id: string; cancelled: boolean }> {
      await owned(actor, id);
      await startedTurn(id);
      const live = turns.get(id);
      if (!live) return { id, cancelled: false };
      live.controller.abort('cancelled' satisfies StopReason);
      await live.result;
      return { id, cancelled: true };
    },

    recover,

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
    close,

    /** Turns in flight (for tests and operators). */
    get active() {
      return turns.size;
    },
  };
}

function usageOf(m: AgentMessageRow): Usage {
  return { promptTokens: m.promptTokens ?? 0, completionTokens: m.completionTokens ?? 0, totalTokens: m.totalTokens ?? 0 };
}

export type AgentService = ReturnType<typeof createAgentService>;
