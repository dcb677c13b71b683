// Parsers for the byte streams the engine sends: multiplexed stdout/stderr frames, log lines
// (rebuilt from the engine's messages and cut into bounded pieces), and newline-delimited JSON.
// No engine client here: engine/docker.ts feeds them.
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

/** The most UTF-8 bytes one log piece (one Log entry's message) holds. */
export const LOG_PIECE_MAX_BYTES = 64 * 1024;

/** A log line, or one of the consecutive pieces a line longer than the cap is cut into. */
export interface LogPiece {
  /** The engine's timestamp of the line (all its pieces share it). */
  ts: string;
  /** At most maxBytes of UTF-8, never cut inside a character. */
  text: string;
  /** Position of the piece in its line, from 0: with ts, it orders and de-duplicates pieces. */
  index: number;
  /** True for the line's last piece. */
  last: boolean;
}

type OnPiece = (stream: StdStream, piece: LogPiece) => void;

const utf8 = new TextEncoder();

/**
 * Cuts one stream's lines into pieces of at most maxBytes of UTF-8 as the text arrives, so a line
 * of any length costs time linear in its length and memory of one piece. encodeInto fills the
 * piece's remaining room and stops before a character that does not fit, which is the cut.
 */
export function lineCutter(maxBytes: number, emit: (piece: LogPiece) => void) {
  if (maxBytes < 4) throw new RangeError('a piece must hold any one character (4 bytes)');
  const room = new Uint8Array(maxBytes);
  let parts: string[] = [];
  let used = 0;
  let index = 0;
  let ts = '';
  let open = false;
  const out = (last: boolean) => {
    emit({ ts, text: parts.length === 1 ? parts[0]! : parts.join(''), index: index++, last });
    parts = [];
    used = 0;
  };
  return {
    /** True between begin() and end(). */
    get open() {
      return open;
    },
    begin(lineTs: string) {
      ts = lineTs;
      index = 0;
      open = true;
    },
    append(text: string) {
      let s = text;
      while (s.length > 0) {
        const r = utf8.encodeInto(s, room.subarray(used));
        if (r.read === s.length) {
          parts.push(s);
          used += r.written;
          return;
        }
        if (r.read > 0) parts.push(s.slice(0, r.read));
        used += r.written;
        out(false);
        s = s.slice(r.read);
      }
    },
    end() {
      out(true);
      open = false;
    },
  };
}

const TS_MAX = 40;

/** "<ts> <bytes>": the ASCII timestamp before the first space, when there is one. */
function splitTimestamp(bytes: Uint8Array): { ts: string; body: Uint8Array } {
  const sp = bytes.subarray(0, TS_MAX + 1).indexOf(0x20);
  if (sp <= 0) return { ts: '', body: bytes };
  return { ts: String.fromCharCode(...bytes.subarray(0, sp)), body: bytes.subarray(sp + 1) };
}

/** A line cutter and a decoder per stream: what both log assemblers below keep. */
function streamCutters(onPiece: OnPiece, maxBytes: number) {
  const make = (s: StdStream) => ({ cut: lineCutter(maxBytes, (p) => onPiece(s, p)), dec: new TextDecoder() });
  return { stdout: make('stdout'), stderr: make('stderr') };
}

/** Ends each stream's line in progress with what its decoder still holds (the end of the log). */
function flushCutters(st: ReturnType<typeof streamCutters>) {
  for (const { cut, dec } of Object.values(st)) {
    const rest = dec.decode();
    if (!cut.open && !rest) continue;
    if (!cut.open) cut.begin('');
    cut.append(rest);
    cut.end();
  }
}

/**
 * Rebuilds log lines from the engine's log frames (one frame per log message, "<ts> <text>") and
 * cuts them into pieces of at most maxBytes. The engine splits a line longer than 16 KiB into
 * partial messages without a newline, each with the line's timestamp; the engine cuts bytes, so the
 * timestamp is removed before decoding and a character split between two messages stays whole.
 * `messages` counts the engine's messages (its `tail` counts those).
 */
export function logPieceAssembler(onPiece: OnPiece, maxBytes = LOG_PIECE_MAX_BYTES) {
  const st = streamCutters(onPiece, maxBytes);
  let messages = 0;
  return {
    get messages() {
      return messages;
    },
    push(stream: StdStream, bytes: Uint8Array) {
      messages++;
      const { cut, dec } = st[stream];
      let { ts, body } = splitTimestamp(bytes);
      const ends = body.length > 0 && body[body.length - 1] === 0x0a;
      if (ends) body = body.subarray(0, body.length - 1);
      if (!cut.open) cut.begin(ts);
      const text = dec.decode(body, { stream: !ends });
      // One message is one line; a newline inside one (not seen from the engine) still ends a line.
      let from = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', from)) {
        cut.append(text.slice(from, nl));
        cut.end();
        cut.begin(ts);
        from = nl + 1;
      }
      cut.append(from === 0 ? text : text.slice(from));
      if (ends) cut.end();
    },
    flush: () => flushCutters(st),
  };
}

/**
 * The same pieces from raw (TTY) output: no message boundaries, "<ts> " opens each line. A line's
 * timestamp is read when its first chunk holds it whole (a 40-byte prefix), else it stays empty.
 */
export function rawLogAssembler(onPiece: OnPiece, maxBytes = LOG_PIECE_MAX_BYTES) {
  const st = streamCutters(onPiece, maxBytes);
  return {
    push(stream: StdStream, bytes: Uint8Array) {
      const { cut, dec } = st[stream];
      const text = dec.decode(bytes, { stream: true });
      let from = 0;
      while (from < text.length) {
        if (!cut.open) {
          const sp = text.indexOf(' ', from);
          const hasTs = sp > from && sp - from <= TS_MAX && /^\d/.test(text[from]!);
          cut.begin(hasTs ? text.slice(from, sp) : '');
          if (hasTs) from = sp + 1;
        }
        const nl = text.indexOf('\n', from);
        if (nl < 0) {
          cut.append(text.slice(from));
          return;
        }
        cut.append(text.slice(from, nl));
        cut.end();
        from = nl + 1;
      }
    },
    flush: () => flushCutters(st),
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
