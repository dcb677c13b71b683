// The one Server-Sent Events reader of the SDK (and the dashboard): eventsource-parser does the
// framing (CR, LF and CRLF line ends, multi-line data, comments, ids); this turns a fetch answer's
// body into an async iterable of events with their JSON data parsed.
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** One event as sent: its `event:` name (`message` when none), its `id:` and its `data:` parsed as JSON (the text when not JSON). */
export interface SseEvent<D = unknown> {
  event: string;
  id?: string;
  data: D;
}

/**
 * The events of a text/event-stream answer, in order. Comments (`: keep-alive`) are skipped. Ends
 * when the server ends the stream; throws when the connection breaks (the caller may resume with the
 * last `id`). Break out of the loop (or abort the request) to leave earlier.
 */
export async function* readEvents<E extends { event: string; data: unknown } = SseEvent>(response: Response): AsyncGenerator<E> {
  if (!response.body) return;
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => void queue.push(e) });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let endsWithCr = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        // A CR the stream ended on is a line end the parser holds back (a LF may have followed it).
        if (endsWithCr) parser.feed('\n');
      } else {
        if (value.length) endsWithCr = value.endsWith('\r');
        parser.feed(value);
      }
      while (queue.length) yield toEvent(queue.shift()!) as unknown as E;
      if (done) break;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function toEvent(m: EventSourceMessage): SseEvent {
  let data: unknown = m.data;
  try {
    data = JSON.parse(m.data);
  } catch {
    // Not JSON: the text as sent.
  }
  return { event: m.event ?? 'message', ...(m.id !== undefined ? { id: m.id } : {}), data };
}
