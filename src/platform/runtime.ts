// Time, ids and logging behind small helpers, so tests and services reason about them the same way.
import { scrub } from './errors';

export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** A sortable, unguessable id: `<prefix>_<time><random>` (Crockford base32). */
export function newId(prefix: string, clock: Clock): string {
  let t = clock.now();
  let time = '';
  for (let i = 0; i < 9; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  let rand = '';
  for (const b of bytes) rand += ALPHABET[b % 32];
  return `${prefix}_${time}${rand}`;
}

export const isoNow = (clock: Clock) => new Date(clock.now()).toISOString();

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export interface Logger {
  child(fields: Record<string, unknown>): Logger;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** JSON-lines logger to stderr; every field passes through `scrub` so secrets never reach a log. */
/** `level` comes from the platform config (APP_LOG_LEVEL) where a process starts; `info` otherwise. */
export function createLogger(base: Record<string, unknown> = {}, level: LogLevel = 'info'): Logger {
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < ORDER[level]) return;
    const line = { time: new Date().toISOString(), level: lvl, msg, ...base, ...(fields ? (scrub(fields) as object) : {}) };
    process.stderr.write(JSON.stringify(line) + '\n');
  };
  return {
    child: (fields) => createLogger({ ...base, ...fields }, level),
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

export function errorFields(e: unknown): Record<string, unknown> {
  if (e instanceof Error) return { err: e.message, errName: e.name };
  return { err: String(e) };
}
