// The platform's variables (listen address, ports, services, data dir, API secret, bus), read once
// and validated, and the readers every service parses its own variables with (its *.config.ts).
// A bad value stops start-up with one line naming the variable.
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { LogLevel } from './runtime';

export const SERVICE_NAMES = ['workspaces', 'catalog', 'sources', 'workers', 'identity', 'playback'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}

export interface Config {
  production: boolean;
  host: string;
  ports: Record<ServiceName, number>;
  services: ServiceName[];
  dataDir: string;
  apiSecret: string;
  /** True when the secret was generated (dev mode); start-up then prints an admin token. */
  apiSecretGenerated: boolean;
  bus: string;
  /** APP_BUS_MAX_DELIVER: attempts of a durable event by one JetStream consumer before it goes to `dlq.<subject>` (default 50). */
  busMaxDeliver: number;
  /** APP_DATABASE_URL: a postgres:// URL keeps state in PostgreSQL; unset, the SQLite file under the data dir. */
  databaseUrl?: string;
  /** APP_LOG_LEVEL: `debug`, `info`, `warn`, `error`; default `info`, `warn` under NODE_ENV=test. */
  logLevel: LogLevel;
  /** What GET /version reports: APP_COMMIT (default: the binary's commit, `dev` from source) and APP_TRAIN (`edge`). */
  build: { commit?: string; train: string };
  /** The raw environment, for the variables each service parses itself (its *.config.ts). */
  env: Env;
}

// Small typed readers: every service parses its own variables with these, so the
// one-line error format stays the same everywhere.
export function readString(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

export function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number from ${min} to ${max}`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max}`);
  return n;
}

/** A `:`-separated list of absolute directories (APP_MEDIA_ROOTS), resolved; empty when unset. */
export function readDirList(env: Env, name: string): string[] {
  const dirs = readString(env, name, '').split(':').filter(Boolean);
  for (const d of dirs) {
    if (!isAbsolute(d)) throw new ConfigError(name, 'every entry must be an absolute directory');
  }
  return dirs.map((d) => resolve(d));
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `0`, `250ms`, `5s`, `5m`, `2h`, `1d` -> milliseconds; null when it is not such a duration. */
export function parseDuration(text: string): number | null {
  const m = /^(\d{1,9})(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  if (!m[2]) return n === 0 ? 0 : null; // a bare number other than 0 has no unit a reader can guess
  return n * UNIT_MS[m[2]]!;
}

export function readDuration(env: Env, name: string, fallback: string, minMs: number): number {
  const raw = readString(env, name, fallback);
  const ms = parseDuration(raw);
  if (ms === null || ms < minMs) throw new ConfigError(name, `must be a duration such as 30s, 5m, 2h or 5d (at least ${minMs} ms)`);
  return ms;
}

export function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, 'must be true or false');
}

// Port 0 asks the system for any free port (tests use it).
const readPort = (env: Env, name: string, fallback: number) => readInt(env, name, fallback, 0, 65535);

function readServices(env: Env): ServiceName[] {
  const raw = env.APP_SERVICES;
  if (!raw) return [...SERVICE_NAMES];
  const names = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new ConfigError('APP_SERVICES', `must name at least one of ${SERVICE_NAMES.join(', ')}`);
  for (const n of names) {
    if (!(SERVICE_NAMES as readonly string[]).includes(n)) {
      throw new ConfigError('APP_SERVICES', `unknown service; choose from ${SERVICE_NAMES.join(', ')}`);
    }
  }
  return [...new Set(names)] as ServiceName[];
}

function readBus(env: Env): string {
  const v = readString(env, 'APP_BUS', 'memory');
  if (v !== 'memory' && !/^nats:\/\/[^\s]+$/.test(v)) throw new ConfigError('APP_BUS', 'must be memory or a nats:// URL');
  return v;
}

function readDatabaseUrl(env: Env): string | undefined {
  const v = readString(env, 'APP_DATABASE_URL', '');
  if (v === '') return undefined;
  // The value holds a password: the message never repeats it.
  if (!/^postgres(ql)?:\/\/[^\s]+$/.test(v)) throw new ConfigError('APP_DATABASE_URL', 'must be a postgres:// URL (unset: the SQLite file under APP_DATA_DIR)');
  return v;
}

const SECRET_RE = /^[0-9a-f]{64}$/i;

/** The workspace-API secret: given, or (outside production) generated once and kept under the data dir. */
function readApiSecret(env: Env, dataDir: string, production: boolean): { secret: string; generated: boolean } {
  const given = env.APP_API_SECRET;
  if (given !== undefined && given !== '') {
    if (!SECRET_RE.test(given)) throw new ConfigError('APP_API_SECRET', 'must be 64 hexadecimal characters (32 random bytes)');
    // The contract signs with the secret's UTF-8 bytes as given: `ABCD...` and `abcd...` are two keys.
    return { secret: given, generated: false };
  }
  if (production) throw new ConfigError('APP_API_SECRET', 'is required in production (64 hexadecimal characters)');
  const file = join(dataDir, 'api-secret');
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    if (SECRET_RE.test(kept)) return { secret: kept, generated: true };
  }
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return { secret, generated: true };
}

function readLogLevel(env: Env): LogLevel {
  const v = env.APP_LOG_LEVEL;
  // An unknown level falls back to the default rather than stopping start-up, as it always has.
  if (v === 'debug' || v === 'info' || v === 'warn' || v === 'error') return v;
  return env.NODE_ENV === 'test' ? 'warn' : 'info';
}

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const dataDir = resolve(readString(env, 'APP_DATA_DIR', './data'));
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch {
    throw new ConfigError('APP_DATA_DIR', 'cannot be created or is not writable');
  }
  const { secret, generated } = readApiSecret(env, dataDir, production);
  return {
    production,
    host: readString(env, 'APP_HOST', '127.0.0.1'),
    ports: {
      workspaces: readPort(env, 'APP_WORKSPACES_PORT', 3100),
      catalog: readPort(env, 'APP_CATALOG_PORT', 3101),
      sources: readPort(env, 'APP_SOURCES_PORT', 3102),
      workers: readPort(env, 'APP_WORKERS_PORT', 3103),
      identity: readPort(env, 'APP_IDENTITY_PORT', 3104),
      playback: readPort(env, 'APP_PLAYBACK_PORT', 3106),
    },
    services: readServices(env),
    dataDir,
    apiSecret: secret,
    apiSecretGenerated: generated,
    bus: readBus(env),
    busMaxDeliver: readInt(env, 'APP_BUS_MAX_DELIVER', 50, 1, 10_000),
    databaseUrl: readDatabaseUrl(env),
    build: { commit: env.APP_COMMIT || undefined, train: readString(env, 'APP_TRAIN', 'edge') },
    logLevel: readLogLevel(env),
    env,
  };
}
