// Reads a container's log for a caller without holding more of it than the caller is about to take.
// The last `tail` entries are located first by their keys (a message is kept only while what is kept
// stays under HOLD_MAX_CHARS); when the entries are larger than that (a 100 MB line is 1,500 of them),
// they are read a second time and handed over as the caller takes them, the engine stream pausing
// while the caller is behind. Memory is a few pieces, never the line.
import { EngineError, type Engine, type StdStream } from '../engine/engine';
import type { LogPiece } from '../engine/frames';
import { pieceParser, type ParsedLine } from './logs.parse';
import { LOG_CHURN_COLLECT_CHARS } from './logs.model';
import { createChurnGuard } from '../../../platform/churn';

/** Characters of messages a tail read keeps; past this, the entries are read again, streamed. */
export const HOLD_MAX_CHARS = 1 << 20;
/** Characters read ahead of the caller before the engine stream pauses, and where it resumes. */
const AHEAD_MAX_CHARS = 512 * 1024;
const RESUME_AT_CHARS = 128 * 1024;
/** Each piece read leaves several times its size in garbage (text, JSON, bytes): collected as it goes. */
const churn = createChurnGuard(LOG_CHURN_COLLECT_CHARS);
/** Engine messages (16 KiB at most) one entry (64 KiB at most) may span, a cut character included. */
const MESSAGES_PER_ENTRY = 5;

export interface PieceReader extends AsyncIterable<{ stream: StdStream; piece: LogPiece }> {
  /** Engine messages read so far (the engine's `tail` counts these). */
  readonly messages: number;
}

/**
 * Opens a read of a container's log (errors, a missing container among them, are thrown here, before
 * anything was answered) whose pieces are read from the engine only as fast as they are taken.
 * Leaving the iteration early closes the engine stream.
 */
export async function openPieces(
  engine: Engine,
  containerId: string,
  opts: { tail: number | 'all'; sinceSeconds?: number },
): Promise<PieceReader> {
  const queue: { stream: StdStream; piece: LogPiece }[] = [];
  let head = 0;
  let ahead = 0;
  let paused = false;
  let ended = false;
  let opened = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const handle = await engine.logStream(containerId, { follow: false, ...opts }, (stream, piece) => {
    queue.push({ stream, piece });
    ahead += piece.text.length;
    if (!paused && ahead > AHEAD_MAX_CHARS) {
      paused = true;
      // The callback can run before logStream's promise settled: the handle is then paused below.
      if (opened) handle.pause();
    }
    notify();
  });
  opened = true;
  if (paused) handle.pause();
  void handle.done.then(() => {
    ended = true;
    notify();
  });

  async function* iterate() {
    try {
      for (;;) {
        if (head < queue.length) {
          const next = queue[head]!;
          queue[head++] = undefined as never;
          if (head > 1024 && head * 2 > queue.length) {
            queue.splice(0, head);
            head = 0;
          }
          ahead -= next.piece.text.length;
          churn(next.piece.text.length);
          if (paused && ahead < RESUME_AT_CHARS) {
            paused = false;
            handle.resume();
          }
          yield next;
          continue;
        }
        if (ended) return;
        await new Promise<void>((r) => (wake = r));
      }
    } finally {
      handle.close();
    }
  }
  return {
    get messages() {
      return handle.messages;
    },
    [Symbol.asyncIterator]: iterate,
  };
}

/** The last entries of a log: held when small, else an iterable that reads them as they are taken. */
export interface TailRead {
  /** The entries, when they fit HOLD_MAX_CHARS; null when `entries` must be iterated instead. */
  held: ParsedLine[] | null;
  /** The entries, oldest first; read from the engine while iterated when `held` is null (once only). */
  entries: AsyncIterable<ParsedLine>;
}

interface Located {
  key: string;
  stream: StdStream;
  /** Part of the stream's first line, which may have begun before the read. */
  first: boolean;
  /** The entry itself while what is kept stays under HOLD_MAX_CHARS. */
  line?: ParsedLine;
}

/** Resolves to undefined for a container the engine does not know (its log is gone with it). */
async function locate(engine: Engine, containerId: string, n: number | 'all', tail: number, service?: string) {
  // Only the last `tail` entries are kept, whatever the read spans; a kept entry loses its message
  // (oldest first) once the messages kept exceed HOLD_MAX_CHARS. Messages kept are a suffix of `kept`.
  let kept: Located[] = [];
  let lineFrom = 0;
  let chars = 0;
  const parse = pieceParser();
  const lines = { stdout: 0, stderr: 0 };
  let reader: PieceReader;
  try {
    reader = await openPieces(engine, containerId, { tail: n });
  } catch (e) {
    if (e instanceof EngineError && e.kind === 'not-found') return undefined;
    throw e;
  }
  for await (const { stream: s, piece } of reader) {
    if (piece.index === 0) lines[s]++;
    const line = parse(s, piece);
    if (service !== undefined && line.service !== service) continue;
    kept.push({ key: line.key, stream: s, first: lines[s] <= 1, line });
    chars += line.message.length;
    while (chars > HOLD_MAX_CHARS && lineFrom < kept.length) {
      chars -= kept[lineFrom]!.line!.message.length;
      kept[lineFrom++]!.line = undefined;
    }
    if (kept.length >= 2 * tail + 1024) {
      const cut = kept.length - tail;
      for (let i = lineFrom; i < cut; i++) chars -= kept[i]!.line!.message.length;
      kept = kept.slice(cut);
      lineFrom = Math.max(0, lineFrom - cut);
    }
  }
  // Fewer messages than asked for means the log holds no more. Otherwise each stream's first line
  // may have begun before the read: its entries are dropped rather than shown cut differently.
  const complete = n === 'all' || reader.messages < n;
  return { window: (complete ? kept : kept.filter((k) => !k.first)).slice(-tail), complete };
}

/**
 * Reads the entries of `window` again: from the second its first entry was written, each stream's
 * entries between its first and last key in the window, until as many as the window holds came.
 */
async function* reread(engine: Engine, containerId: string, window: Located[], n: number | 'all', service?: string): AsyncGenerator<ParsedLine> {
  const lo: Partial<Record<StdStream, string>> = {};
  const hi: Partial<Record<StdStream, string>> = {};
  for (const k of window) {
    lo[k.stream] ??= k.key;
    hi[k.stream] = k.key;
  }
  const ts = window[0]!.key.split('#')[0]!;
  const at = Date.parse(ts.replace(/\.\d+Z$/, 'Z'));
  // A log without engine timestamps (none to start from) is read over the same span as before.
  const reader = await openPieces(engine, containerId, Number.isNaN(at) ? { tail: n } : { tail: 'all', sinceSeconds: Math.floor(at / 1000) });
  const parse = pieceParser();
  let left = window.length;
  for await (const { stream: s, piece } of reader) {
    const line = parse(s, piece);
    if (service !== undefined && line.service !== service) continue;
    const from = lo[s];
    if (from === undefined || line.key < from || line.key > hi[s]!) continue;
    yield line;
    if (--left === 0) return;
  }
}

/** The last `tail` entries (of `service` when given), oldest first. A container that is gone has none. */
export async function readTail(engine: Engine, containerId: string | null, tail: number, service?: string): Promise<TailRead> {
  const none: TailRead = { held: [], entries: (async function* () {})() };
  if (!containerId || tail <= 0) return none;
  // The engine's tail counts its messages (a long line is one per 16 KiB, an entry up to 5 of them),
  // and lines of every service: widen until enough entries are found, then read the whole log.
  const first = tail * MESSAGES_PER_ENTRY + 16;
  for (const n of [first, first * 8, first * 64, 'all'] as const) {
    const r = await locate(engine, containerId, n, tail, service);
    if (!r) return none;
    if (r.window.length < tail && !r.complete && n !== 'all') continue;
    const { window } = r;
    if (window.every((k) => k.line)) {
      const held = window.map((k) => k.line!);
      return { held, entries: (async function* () { yield* held; })() };
    }
    return { held: null, entries: reread(engine, containerId, window, n, service) };
  }
  return none;
}
