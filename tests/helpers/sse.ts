// Reads a Server-Sent Events response the way a client does: frame by frame, with a deadline.

export interface SseFrame {
  event?: string;
  data?: string;
  id?: string;
  /** Comment text (`: keep-alive`), when the frame is a comment. */
  comment?: string;
}

export interface SseReader {
  /** The next frame, or null when the stream ended. Throws after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseFrame | null>;
  /** The next frame with data (comments skipped). */
  nextEvent(timeoutMs?: number): Promise<SseFrame | null>;
  /** Events until `until` matches (inclusive) or the stream ends. */
  collect(until: (f: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame[]>;
  cancel(): Promise<void>;
}

export function sseReader(res: Response): SseReader {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let done = false;

  const parse = (block: string): SseFrame => {
    const f: SseFrame = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) f.comment = line.slice(1).trim();
      else if (line.startsWith('event:')) f.event = line.slice(6).trim();
      else if (line.startsWith('id:')) f.id = line.slice(3).trim();
      else if (line.startsWith('data:')) f.data = (f.data === undefined ? '' : f.data + '\n') + line.slice(5).replace(/^ /, '');
    }
    return f;
  };

  const queue: SseFrame[] = [];
  const next = async (timeoutMs = 10_000): Promise<SseFrame | null> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (queue.length) return queue.shift()!;
      if (done) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no SSE frame before the deadline');
      let timer: ReturnType<typeof setTimeout> | undefined;
      const r = await Promise.race([
        reader.read(),
        new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), left))),
      ]);
      clearTimeout(timer);
      if (r === 'timeout') throw new Error('no SSE frame before the deadline');
      if (r.done) done = true;
      else {
        buf += dec.decode(r.value, { stream: true });
        const blocks = buf.split('\n\n');
        buf = blocks.pop()!;
        for (const b of blocks) queue.push(parse(b));
      }
    }
  };

  const nextEvent = async (timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = await next(Math.max(1, deadline - Date.now()));
      if (f === null || f.data !== undefined) return f;
    }
  };

  return {
    next,
    nextEvent,
    async collect(until, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      const out: SseFrame[] = [];
      for (;;) {
        const f = await nextEvent(Math.max(1, deadline - Date.now()));
        if (f === null) return out;
        out.push(f);
        if (until(f)) return out;
      }
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}
