// A turn in flight as the service holds it: its events for followers, what it said so far, how to
// stop it, and its result.
import type { AppError } from '../../../platform/errors';
import type { AgentEvent, AssistantReply, ToolCall, Usage } from './agent.model';
import { zeroUsage, type TurnProgress } from './agent.turn';

export interface LiveTurn {
  sessionId: string;
  /** Who the turn's tokens are counted against (the caller), and the session's model. */
  actor: string;
  model: string;
  messageId: string;
  /** The session's last event id before this turn: the turn's events come after it. */
  afterEventId: number;
  nextSeq: number;
  /** Every event of this turn, in order: followers read from here once they caught up with the log. */
  events: AgentEvent[];
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
export type TurnEnd = Pick<LiveTurn, 'sessionId' | 'actor' | 'model' | 'messageId' | 'nextSeq' | 'events' | 'ended' | 'wake'>;

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
    ended: false,
    content: p?.content ?? '',
    toolCalls: p ? [...p.toolCalls] : [],
    usage: p ? { ...p.usage } : zeroUsage(),
    controller: new AbortController(),
    awaiting: false,
    result: undefined as never,
  };
}
