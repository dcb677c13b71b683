// Parsers for the byte streams the engine sends: multiplexed stdout/stderr frames, lines, log
// messages split by the engine, and newline-delimited JSON. No engine client here: engine/docker.ts feeds them.
import type { StdStream } from './engine';

/**
 * Splits the engine's multiplexed byte stream into (stream, bytes) chunks, one per engine frame.
 * Raw (TTY) output is stdout, with `framed` false: its chunks have no message boundaries.
 */
export function frameSplitter(onChunk: (stream: StdStream, bytes: Uint8Array, framed: boolean) => void) {
  let pending: Buffer = Buffer.alloc(0);
  let raw: boolean | undefined;
  return (data: Buffer) => {
    if (raw === undefined && data.length > 0) raw = !(data[0]! <= 2 && data.length >= 4 && data[1] === 0 && data[2] === 0 && data[3] === 0);
    if (raw) return onChunk('stdout', data, false);
    pending = pending.length ? Buffer.concat([pending, data]) : data;
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const kind = pending[0] === 2 ? 'stderr' : 'stdout';
      onChunk(kind, pending.subarray(8, 8 + size), true);
      pending = pending.subarray(8 + size);
    }
  };
}

/** Calls onLine for each complete line of each stream; a last unterminated line is flushed at the end. */
export function lineSplitter(onLine: (stream: StdStream, line: string) => void) {
  const rest: Record<StdStream, string> = { stdout: '', stderr: '' };
  const dec: Record<StdStream, TextDecoder> = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  return {
    push(stream: StdStream, bytes: Uint8Array) {
      const text = rest[stream] + dec[stream].decode(bytes, { stream: true });
      const parts = text.split('\n');
      rest[stream] = parts.pop()!;
      for (const p of parts) onLine(stream, p);
    },
    flush() {
      for (const s of ['stdout', 'stderr'] as const) {
        const last = rest[s] + dec[s].decode();
        rest[s] = '';
        if (last) onLine(s, last);
      }
    },
  };
}

/**
 * Rebuilds log lines from the engine's log frames (one frame per log message, "<ts> <text>"). The
 * engine splits a line longer than 16 KiB into partial messages without a newline, each with its
 * own timestamp: the pieces are joined under the first piece's timestamp.
 */
export function logMessageJoiner(onLine: (stream: StdStream, line: string) => void) {
  const partial: Record<StdStream, string> = { stdout: '', stderr: '' };
  const dec: Record<StdStream, TextDecoder> = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  return {
    push(stream: StdStream, bytes: Uint8Array) {
      let text = dec[stream].decode(bytes, { stream: true });
      if (partial[stream]) text = text.replace(/^\S+ /, '');
      text = partial[stream] + text;
      if (!text.endsWith('\n')) {
        partial[stream] = text;
        return;
      }
      partial[stream] = '';
      for (const line of text.slice(0, -1).split('\n')) onLine(stream, line);
    },
    flush() {
      for (const s of ['stdout', 'stderr'] as const) {
        const last = partial[s] + dec[s].decode();
        partial[s] = '';
        if (last) onLine(s, last);
      }
    },
  };
}

/** Calls onValue for each JSON value of a newline-delimited JSON stream (the engine's event stream); other lines are skipped. */
export function jsonLineSplitter(onValue: (value: unknown) => void) {
  let buf = '';
  return (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line) continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        continue; // a line that is not JSON is not an event
      }
      onValue(value);
    }
  };
}
