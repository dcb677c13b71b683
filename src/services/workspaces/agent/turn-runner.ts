// The turn runtime: the turns in flight (one per session), each run through the provider loop
// (agent.turn.ts) with the workspace and MCP tools, its one writer, its followers, cancel and time
// limit, shutdown, and the start-up closing of turns that a stop or crash of Keel cut short. The rules
// that admit a turn (ownership, quotas, its two messages) are the session service's (agent.service.ts).
//
// Each turn has one writer (`flushSoon`): its events are numbered when they happen (`nextSeq`, here
// only), stored one batch after another in that order, and handed to followers once stored. So the
// log is always a gap-free prefix of the turn's events, and what a client saw is what is stored.
import { toEnvelope } from '../../../platform/errors';
import { WorkspaceErrors } from '../workspaces.errors';
import type { Actor } from '../../../platform/auth/workspace-token';
import { isoNow, type Clock, type Logger, errorFields } from '../../../platform/runtime';
import type { TargetPolicy } from '../../../platform/net/address-policy';
import type { AgentConfig } from './agent.config';
import type { AgentContext, AgentEvent, AssistantReply, ToolCall, Usage } from './agent.model';
import { EVENT_PAGE, type AgentRepository } from './agent.repository';
import type { AgentMessageRow, AgentSessionRow } from './agent.tables';
import { readParts, runTurn, storedParts, systemPrompt, toModelMessages, zeroUsage, type StopReason, type TurnOutcome, type TurnProgress } from './agent.turn';
import { parsePolicy, SUSPENDED, withApproval, type Approvals } from './approvals';
import { connectMcpServers } from './mcp-client';
import type { Providers } from './providers/providers';
import type { WorkspaceFiles, WorkspaceShell } from './tools';
import type { AgentUsage } from './agent.usage';
import { followEvents, replayTurn } from './agent.log';
import { newLiveTurn, type LiveTurn, type TurnEnd } from './agent.live';

export interface TurnRunnerDeps {
  repository: AgentRepository;
  providers: Providers;
  shell: WorkspaceShell;
  /** The files feature: read_file, write_file and list_directory stream through it. */
  files: WorkspaceFiles;
  usage: AgentUsage;
  approvals: Approvals;
  config: AgentConfig;
  clock: Clock;
  log: Logger;
  /** Aborted when Keel begins to stop: turns end at once as `interrupted` (requests waiting on them answer). */
  shutdown: AbortSignal;
  /** Where a session's MCP servers may be: the webhook targets' rules. */
  mcpPolicy: TargetPolicy;
}

/** A turn the session service admitted: its messages are stored, its events come after `afterEventId`. */
export interface AdmittedTurn {
  messageId: string;
  afterEventId: number;
  /** The session's messages before this turn's. */
  history: AgentMessageRow[];
}

/** A started turn: `result` settles when it ends, `follow` yields its events from the first. */
export interface StartedTurn {
  result: LiveTurn['result'];
  follow(signal: AbortSignal): AsyncIterable<AgentEvent>;
}

type Writer = Pick<TurnRunnerDeps, 'repository' | 'clock' | 'log'>;

export function createTurnRunner(deps: TurnRunnerDeps) {
  const { repository, approvals } = deps;
  const turns = new Map<string, LiveTurn>();
  /** Sessions whose turn is being started (past the busy check, not yet in `turns`): busy too. */
  const starting = new Map<string, Promise<unknown>>();
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

  /** The turn ended (or, suspended, stopped for now): off the session, its followers woken for the last time. */
  function release(live: TurnEnd) {
    live.ended = true;
    turns.delete(live.sessionId);
    wake(live);
  }

  function run(live: LiveTurn, row: AgentSessionRow, actor: Actor, message: string, history: AgentMessageRow[], resume?: TurnProgress) {
    live.result = (async () => {
      let outcome: TurnOutcome;
      let failed = false;
      try {
        outcome = await execute(deps, live, row, actor, message, history, resume);
      } catch (e) {
        deps.log.error('agent turn failed unexpectedly', { session: live.sessionId, ...errorFields(e) });
        failed = true;
        outcome = { content: live.content, toolCalls: live.toolCalls, parts: [], usage: live.usage, finishReason: 'error', error: WorkspaceErrors.INTERNAL_ERROR('the turn failed inside Keel') };
      }
      if (!failed && live.controller.signal.reason === SUSPENDED) {
        await suspend(deps, live, outcome);
        release(live);
        const reply: AssistantReply = { id: live.messageId, role: 'assistant', content: outcome.content, finishReason: 'interrupted', usage: outcome.usage, toolCalls: outcome.toolCalls };
        return { reply, error: WorkspaceErrors.SHUTTING_DOWN('Keel is stopping; the turn waits for approval and goes on once Keel is back') };
      }
      return finish(deps, live, outcome, release);
    })();
  }

  function startLive(...args: Parameters<typeof newLiveTurn>): LiveTurn {
    const live = newLiveTurn(...args);
    turns.set(live.sessionId, live);
    return live;
  }

  /** Closes the turns that were running when Keel last stopped: their stored content kept, `interrupted`. */
  async function recover() {
    for (const m of await repository.unfinishedTurns()) {
      if ((await approvals.pendingMessages(m.sessionId)).has(m.id)) {
        await resumePaused(m);
        continue;
      }
      const { content, toolCalls, parts } = await replayTurn(repository, m.sessionId, m.afterEventId ?? 0);
      // The caller of a cut-short turn is not stored: its tokens count against the session's owner.
      const session = await repository.session(m.sessionId);
      const nextSeq = (await repository.lastEventId(m.sessionId)) + 1;
      const end: TurnEnd = { sessionId: m.sessionId, actor: session?.owner ?? '', model: session?.model ?? '', messageId: m.id, nextSeq, events: [], ended: false, writes: Promise.resolve() };
      await finish(deps, end, { content, toolCalls, parts, usage: usageOf(m), finishReason: 'interrupted' }, release);
      deps.log.warn('agent turn interrupted by a restart, closed', { session: m.sessionId, message: m.id });
    }
  }

  /** A turn paused for approval when Keel stopped: live again, waiting on the same stored calls. */
  async function resumePaused(m: AgentMessageRow) {
    const row = (await repository.session(m.sessionId))!;
    const all = await repository.messages(m.sessionId);
    const user = all.find((x) => x.ordinal === m.ordinal - 1)!;
    const history = all.filter((x) => x.ordinal < user.ordinal);
    const toolCalls: ToolCall[] = m.toolCalls ? JSON.parse(m.toolCalls) : [];
    const progress: TurnProgress = { content: m.content, toolCalls, parts: m.parts ? readParts(m.parts, toolCalls) : [], usage: usageOf(m) };
    // Its live events start after the stored log (followers read the earlier ones from the table).
    const last = await repository.lastEventId(m.sessionId);
    const live = startLive(m.sessionId, row.owner, row.model, m.id, last, last + 1, progress);
    // Its caller is not stored: the session's owner acts (tools, quotas) for the rest of the turn.
    run(live, row, { id: row.owner, admin: false }, user.content, history, progress);
    deps.log.info('agent turn waiting for approval taken up again', { session: m.sessionId, message: m.id });
  }

  return {
    /**
     * Starts a turn of `row`'s session once `admit` (the session service's checks and the turn's
     * messages) has passed, and answers at once. The session is busy from the check on: a second start
     * now is 409 until this one has started or failed. The turn runs to its end whoever listens.
     */
    async start(actor: Actor, row: AgentSessionRow, message: string, admit: () => Promise<AdmittedTurn>): Promise<StartedTurn> {
      const id = row.id;
      if (closing) throw WorkspaceErrors.SHUTTING_DOWN('Keel is shutting down; send the message again once it is back');
      if (turns.has(id) || starting.has(id)) throw WorkspaceErrors.SESSION_BUSY('a turn is in flight in this session; wait for its done event or cancel it', { sessionId: id });
      // Marked busy in the same step as the check.
      const started = (async (): Promise<StartedTurn> => {
        const { messageId, afterEventId, history } = await admit();
        const live = startLive(id, actor.id, row.model, messageId, afterEventId, afterEventId + 1);
        run(live, row, actor, message, history);
        return { result: live.result, follow: (signal) => followEvents(repository, id, afterEventId, live, signal) };
      })();
      starting.set(id, started);
      try {
        return await started;
      } finally {
        starting.delete(id);
      }
    },

    /** Stops the session's turn in flight (one being started is waited for first); false when none. */
    async stop(id: string, reason: StopReason): Promise<boolean> {
      await starting.get(id)?.catch(() => undefined);
      const live = turns.get(id);
      if (!live) return false;
      live.controller.abort(reason);
      await live.result;
      return true;
    },

    /** The session's turn in flight, if any. */
    live: (id: string): LiveTurn | undefined => turns.get(id),

    /** Tokens of `actor`'s turns in flight: spent, only not stored yet. */
    tokensInFlight(actor: string): number {
      let n = 0;
      for (const t of turns.values()) if (t.actor === actor) n += t.usage.totalTokens;
      return n;
    },

    /** The session's events after `after`, then its turn in flight until its end (at once when none). */
    follow: (id: string, after: number, signal: AbortSignal): AsyncIterable<AgentEvent> => followEvents(repository, id, after, turns.get(id), signal),

    recover,

    /** Shutdown: every turn in flight ends now as `interrupted`, stored before the database closes. */
    close,

    /** Turns in flight. */
    get active() {
      return turns.size;
    },
  };
}

export type TurnRunner = ReturnType<typeof createTurnRunner>;

export function usageOf(m: AgentMessageRow): Usage {
  return { promptTokens: m.promptTokens ?? 0, completionTokens: m.completionTokens ?? 0, totalTokens: m.totalTokens ?? 0 };
}

/** Runs one turn to its outcome: the provider loop with the session's tools, its time limit and approvals. */
async function execute(deps: TurnRunnerDeps, live: LiveTurn, row: AgentSessionRow, actor: Actor, message: string, history: AgentMessageRow[], resume?: TurnProgress): Promise<TurnOutcome> {
  const { clock, config } = deps;
  const budget = config.maxSessionTokens - row.totalTokens;
  // The session has spent its tokens: the turn ends at once, without a provider call.
  if (budget <= 0 && !resume) return { content: '', toolCalls: [], parts: [], usage: zeroUsage(), finishReason: 'token-limit' };
  // The tools build on the AI SDK, which loads with the first turn, not with Keel (providers/ai-sdk.ts).
  const { workspaceTools } = await import('./tools');
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
    return await runTurn(deps.providers, {
      model: row.model,
      system: systemPrompt(row.workspaceId, JSON.parse(row.context) as AgentContext, mcp.notes),
      history: toModelMessages(history),
      message,
      tools: withApproval({ ...mcp.tools, ...workspaceTools(deps.shell, deps.files, actor, row.workspaceId) }, parsePolicy(row.toolApproval)),
      resume,
      async awaitDecisions(calls) {
        clearTimeout(timer);
        left -= clock.now() - since;
        live.awaiting = true;
        try {
          return await deps.approvals.wait({ sessionId: live.sessionId, messageId: live.messageId, signal: live.controller.signal }, calls, (a) => emit(deps, live, 'approval', a));
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
        emit(deps, live, 'delta', { content: text });
      },
      onTool(call) {
        live.toolCalls.push(call);
        emit(deps, live, 'tool', call);
      },
      onProgress(p) {
        live.usage = { ...p.usage };
        saveProgress(deps, live, p);
      },
    });
  } finally {
    clearTimeout(timer);
    await mcp.close();
  }
}

/**
 * Keel stops while the turn waits for approval: nothing ends, the stored parts and pending calls are
 * taken up again at start-up. A request waiting on the turn answers 503; a stream just closes.
 */
async function suspend(w: Writer, live: LiveTurn, o: TurnOutcome) {
  saveProgress(w, live, o);
  await written(live);
}

/**
 * Stores the turn's end (reply, totals, last event) in one transaction, after everything the turn
 * said before, then hands the last event to its followers and releases the session (`release`, in
 * the same step: whoever sees the end sees the session free).
 */
async function finish(deps: Pick<TurnRunnerDeps, 'repository' | 'clock' | 'log' | 'usage'>, live: TurnEnd, o: TurnOutcome, release: (live: TurnEnd) => void) {
  // The end's own write below stores the whole reply: progress still waiting would only be written
  // (and a megabyte tool output serialised) once more just before it.
  live.progress = undefined;
  await written(live);
  const reply: AssistantReply = { id: live.messageId, role: 'assistant', content: o.content, finishReason: o.finishReason, usage: o.usage, toolCalls: o.toolCalls };
  await deps.usage.record(live, o.usage);
  const last: AgentEvent = o.error ? { id: live.nextSeq++, event: 'error', data: toEnvelope(o.error) } : { id: live.nextSeq++, event: 'done', data: reply };
  try {
    await deps.repository.finishTurn(
      live.sessionId,
      live.messageId,
      { content: o.content, ...callsOf(live, o)(), usage: o.usage, finishReason: o.finishReason },
      { seq: last.id, event: last.event, data: JSON.stringify(last.data) },
      isoNow(deps.clock),
    );
  } catch (e) {
    // The session was deleted meanwhile (or the database is closing): followers still get the end.
    deps.log.warn('agent turn end not stored', { session: live.sessionId, ...errorFields(e) });
  }
  live.events.push(last);
  release(live);
  return { reply, error: o.error };
}

// The turn's writer. Everything below runs on one turn's state; nothing else writes its events.

const nextLoopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function wake(live: TurnEnd) {
  const w = live.wake;
  live.wake = undefined;
  w?.resolve();
}

/** Numbers one event now; the turn's writer appends it to the log, then hands it to the followers. */
function emit(w: Writer, live: LiveTurn, event: 'delta' | 'tool' | 'approval', data: unknown) {
  const seq = live.nextSeq++;
  live.unstored.push({ event: { id: seq, event, data }, stored: { seq, event, data: JSON.stringify(data) }, at: isoNow(w.clock) });
  flushSoon(w, live);
}

/** What the turn has said so far, stored by the turn's writer (only the latest is kept waiting). */
function saveProgress(w: Writer, live: LiveTurn, p: TurnProgress) {
  const { content } = p;
  const usage = { ...p.usage };
  const calls = callsOf(live, p);
  live.progress = () => ({ content, ...calls(), usage });
  flushSoon(w, live);
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
function flushSoon(w: Writer, live: LiveTurn) {
  if (live.flushQueued) return;
  live.flushQueued = true;
  live.writes = live.writes.then(nextLoopTurn).then(() => flush(w, live));
}

/** Stores what waits (events in order, then progress), then hands the events to the followers. Never rejects. */
async function flush(w: Writer, live: LiveTurn) {
  live.flushQueued = false;
  const batch = live.unstored.splice(0, EVENT_PAGE);
  if (live.unstored.length) flushSoon(w, live);
  const progress = live.progress;
  live.progress = undefined;
  try {
    await w.repository.appendEvents(live.sessionId, batch.map((u) => ({ ...u.stored, createdAt: u.at })));
  } catch (e) {
    // Followers still get them; a crash before the turn's end would lose them from the log.
    w.log.warn('agent events not stored', { session: live.sessionId, count: batch.length, ...errorFields(e) });
  }
  if (progress) {
    await w.repository.saveProgress(live.messageId, progress()).catch((e) => w.log.warn('agent turn progress not stored', { session: live.sessionId, ...errorFields(e) }));
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
