// A turn in flight as the turn runner holds it: its events for followers, what it said so far, how to
// stop it, and its result.
import type { AppError } from '../../../platform/errors';
import type { AgentEvent, AssistantReply, ToolCall, Usage } from './agent.model';
import type { StoredEvent, TurnSnapshot } from './agent.repository';
import { zeroUsage, type TurnProgress } from './agent.turn';

export interface LiveTurn {
  sessionId: string;
  /** Who the turn's tokens are counted against (the caller), and the session's model. */
  actor: string;
  model: string;
  messageId: string;
  /** The session's last event id before this turn: the turn's events come after it. */
  afterEventId: number;
  /** The id of the next event: assigned here only, in the order the events happen. */
  nextSeq: number;
  /** Every stored event of this turn, in order: followers read from here once they caught up with the log. */
  events: AgentEvent[];
  /** Events numbered but not stored yet, in order: the turn's writer stores them, then moves them to `events`. */
  unstored: { event: AgentEvent; stored: StoredEvent; at: string }[];
  /**
   * The latest progress not stored yet (only the latest is worth a write), made into its row when it
   * is written: a turn's progress is saved at every tool result and provider call, and serialising
   * each time would copy a 1 MiB tool output into garbage again and again.
   */
  progress?: () => TurnSnapshot;
  /** Which tool calls and parts are stored on the message (turn-runner.ts callsOf). */
  storedPartsKey?: string;
  /** The turn's writes, one after another: each flush of `unstored` and `progress` is chained here. */
  writes: Promise<void>;
  /** A flush is chained on `writes` and has not begun. */
  flushQueued: boolean;
  ended: boolean;
  content: string;
  toolCalls: ToolCall[];
  usage: Usage;
  controller: AbortController;
  /** Tool calls of the turn wait for a decision now. */
  awaiting: boolean;
  /** Resolved at the next event; followers wait on it together. */
  wake?: PromiseWithResolvers<void>;
  result: Promise<{ reply: AssistantReply; error?: AppError }>;
}

/** What ending a turn needs: a live one, or one found unfinished at start-up. */
export type TurnEnd = Pick<LiveTurn, 'sessionId' | 'actor' | 'model' | 'messageId' | 'nextSeq' | 'events' | 'ended' | 'wake' | 'writes' | 'progress' | 'storedPartsKey'>;

/** A turn starting now, or (`p`) a paused one taken up again with what it had said. */
export function newLiveTurn(sessionId: string, actor: string, model: string, messageId: string, afterEventId: number, nextSeq: number, p?: TurnProgress): LiveTurn {
  return {
    sessionId,
    actor,
    model,
    messageId,
    afterEventId,
    nextSeq,
    events: [],
    unstored: [],
    writes: Promise.resolve(),
    flushQueued: false,
    ended: false,
    content: p?.content ?? '',
    toolCalls: p ? [...p.toolCalls] : [],
    usage: p ? { ...p.usage } : zeroUsage(),
    controller: new AbortController(),
    awaiting: false,
    result: undefined as never,
  };
}
