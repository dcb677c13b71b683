// Reading a session's event log: following it (the stored events, then the turn in flight as it
// happens) and replaying a turn's stored events into what it had said (to close a cut-short turn).
import type { AgentEvent, ToolCall } from './agent.model';
import type { AgentRepository } from './agent.repository';
import type { Part } from './agent.turn';

/**
 * What following needs of a turn in flight: its events in memory from `afterEventId + 1` on, without
 * a gap, each put there once stored (so the log holds every event a follower was handed).
 */
export interface FollowedTurn {
  afterEventId: number;
  events: AgentEvent[];
  ended: boolean;
  wake?: PromiseWithResolvers<void>;
}

/**
 * The log after `after`, then the events of the turn in flight (when one is), until it ends or
 * `signal` aborts (the stream's end: its wait must not outlive the client).
 */
export async function* followEvents(repository: AgentRepository, sessionId: string, after: number, live: FollowedTurn | undefined, signal: AbortSignal): AsyncGenerator<AgentEvent> {
  let last = after;
  for (;;) {
    const page = await repository.eventsAfter(sessionId, last);
    for (const e of page) {
      if (signal.aborted) return;
      yield e;
      last = e.id;
    }
    if (page.length === 0) break;
  }
  if (!live) return;
  const stopWaiting = Promise.withResolvers<void>();
  const onAbort = () => stopWaiting.resolve();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      let i = Math.max(0, last - live.afterEventId);
      while (i < live.events.length) {
        const e = live.events[i++]!;
        if (e.id <= last) continue;
        if (signal.aborted) return;
        yield e;
        last = e.id;
      }
      if (live.ended || signal.aborted) return;
      live.wake ??= Promise.withResolvers<void>();
      await Promise.race([live.wake.promise, stopWaiting.promise]);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The text and tool calls of a turn, from its stored events after `afterEventId`. */
export async function replayTurn(repository: AgentRepository, sessionId: string, afterEventId: number): Promise<{ content: string; toolCalls: ToolCall[]; parts: Part[] }> {
  let content = '';
  const toolCalls: ToolCall[] = [];
  const parts: Part[] = [];
  for (let last = afterEventId, page = await repository.eventsAfter(sessionId, last); page.length; page = await repository.eventsAfter(sessionId, last)) {
    for (const e of page) {
      last = e.id;
      if (e.event === 'delta') {
        const text = (e.data as { content: string }).content;
        content += text;
        const tail = parts.at(-1);
        if (tail?.type === 'text') tail.text += text;
        else parts.push({ type: 'text', text });
      } else if (e.event === 'tool') {
        toolCalls.push(e.data as ToolCall);
        parts.push({ type: 'tool', ...(e.data as ToolCall) });
      }
    }
  }
  return { content, toolCalls, parts };
}
