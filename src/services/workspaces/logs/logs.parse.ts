// Turns one engine log line into a Log entry: the engine's timestamp, the service that wrote it
// (read back from the supervisor's tag, or `main` for the container's own process), an honest
// level and the message. Structured JSON lines keep their own level and message; a line longer than
// an entry holds arrives as consecutive entries (the engine layer cuts it, frames.ts).
import { RS, US } from '../lifecycle/supervisor';
import type { LogPiece } from '../engine/frames';
import type { StdStream } from '../engine/engine';
import type { LogEntry, LogLevel } from './logs.model';

/** Service name of what the container's main process writes (CONTRACT.md: a service of its own). */
export const MAIN_SERVICE = 'main';

export interface ParsedLine extends LogEntry {
  /** The engine's own timestamp of the line (RFC 3339 with nanoseconds, fixed width). */
  ts: string;
  /** ts and the entry's position in its line: orders and de-duplicates entries of one stream exactly. */
  key: string;
  /** The engine stream it came from (keys are ordered within one stream). */
  stream: StdStream;
}

const LEVEL_WORDS: Record<string, LogLevel> = {
  trace: 'debug',
  debug: 'debug',
  verbose: 'debug',
  info: 'info',
  information: 'info',
  notice: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  err: 'error',
  fatal: 'error',
  critical: 'error',
  crit: 'error',
  panic: 'error',
  alert: 'error',
  emerg: 'error',
};

/** pino/bunyan numeric levels: 10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal. */
function numericLevel(n: number): LogLevel {
  if (n >= 50) return 'error';
  if (n >= 40) return 'warn';
  if (n >= 30) return 'info';
  return 'debug';
}

/** A stderr line naming an error says so; any other stderr line is a warning. */
const ERROR_WORDS = /\b(error|fatal|panic|exception|traceback|critical)\b/i;

export function levelFor(stream: 'stdout' | 'stderr', message: string): LogLevel {
  if (stream === 'stdout') return 'info';
  return ERROR_WORDS.test(message) ? 'error' : 'warn';
}

/** A JSON object line's own level and message, when it has them. */
function structured(text: string): { level?: LogLevel; message?: string } | undefined {
  if (text.length < 2 || text[0] !== '{' || text[text.length - 1] !== '}') return undefined;
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const o = obj as Record<string, unknown>;
  const raw = o.level ?? o.lvl ?? o.severity ?? o.levelname;
  let level: LogLevel | undefined;
  if (typeof raw === 'number') level = numericLevel(raw);
  else if (typeof raw === 'string') level = LEVEL_WORDS[raw.toLowerCase()];
  const msg = o.msg ?? o.message;
  return { level, message: typeof msg === 'string' ? msg : undefined };
}

/** Engine timestamp (nanoseconds) to ISO 8601 UTC with milliseconds. */
export function isoFromEngine(ts: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?Z$/.exec(ts);
  if (!m) {
    const d = new Date(ts);
    return Number.isNaN(d.getTime()) ? new Date(0).toISOString() : d.toISOString();
  }
  return `${m[1]}.${(m[2] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
}

/** What a line's first piece says of the whole line: its later pieces carry the same. */
interface LineHead {
  service: string;
  level: LogLevel;
}

/**
 * Makes the parser of one engine log stream: each piece (frames.ts) becomes an entry. A line's first
 * piece names its service and level, and its later pieces keep them; a JSON object line keeps its
 * own level and message only when it fits one piece (a longer one is plain text, never held whole).
 */
export function pieceParser() {
  const heads: Record<StdStream, LineHead> = { stdout: { service: MAIN_SERVICE, level: 'info' }, stderr: { service: MAIN_SERVICE, level: 'warn' } };
  return (stream: StdStream, piece: LogPiece): ParsedLine => {
    let text = piece.text;
    if (piece.last && text.endsWith('\r')) text = text.slice(0, -1);
    const key = `${piece.ts}#${String(piece.index).padStart(9, '0')}`;
    const timestamp = isoFromEngine(piece.ts);
    if (piece.index > 0) return { ts: piece.ts, key, stream, timestamp, ...heads[stream], message: text };
    let service = MAIN_SERVICE;
    let from = stream;
    // Supervisor tag: RS name US o|e US line.
    if (text[0] === RS) {
      const a = text.indexOf(US, 1);
      const b = a > 0 ? text.indexOf(US, a + 1) : -1;
      if (a > 1 && b === a + 2) {
        service = text.slice(1, a);
        from = text[a + 1] === 'e' ? 'stderr' : 'stdout';
        text = text.slice(b + 1);
      }
    }
    const s = piece.last ? structured(text) : undefined;
    const message = s?.message ?? text;
    const level = s?.level ?? levelFor(from, message);
    heads[stream] = { service, level };
    return { ts: piece.ts, key, stream, timestamp, service, level, message };
  };
}

/** The public Log entry (without the engine timestamp). */
export const toEntry = (p: ParsedLine): LogEntry => ({ timestamp: p.timestamp, service: p.service, level: p.level, message: p.message });
