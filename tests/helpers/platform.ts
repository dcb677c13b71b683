// Starts the real platform in-process on free ports with a fresh data dir, as tests need it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform, type Platform } from '../../src/main';
import { mintToken } from '../../src/platform/auth/workspace-token';
import type { ServiceName } from '../../src/platform/config';
import { SQL } from 'bun';
import { Database } from 'bun:sqlite';

export const TEST_SECRET = 'a'.repeat(16) + '0123456789abcdef'.repeat(3);

/** Environment the suite relies on; the test preload (tests/helpers/preload.ts) provides it. */
export function requireTestEnv(name: 'DOCKER_HOST' | 'KEEL_TEST_NATS_URL' | 'KEEL_TEST_POSTGRES_URL'): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the suite with \`bun test\` or \`npm test\` from the checkout, whose preload starts what the tests need`);
  return v;
}

export interface TestPlatform extends Platform {
  dataDir: string;
  url(service: ServiceName): string;
  /** A workspace-API token for `sub`. */
  token(sub?: string, opts?: { role?: 'admin'; ttlSeconds?: number }): string;
  /** Its PostgreSQL database on the PostgreSQL pass (APP_DATABASE_URL), to read rows past the services. */
  databaseUrl?: string;
  /** fetch against a service with a Bearer token for `as` (default alice). */
  api(service: ServiceName, path: string, init?: RequestInit & { as?: string | null; json?: unknown }): Promise<Response>;
  /** Stops and removes the data dir. */
  close(): Promise<void>;
}

/**
 * Each test platform gets its own block of host ports (90 ports, 30 workspaces) unless its test names
 * a range: many test files share one engine, and a file's stopped or not-yet-removed workspaces keep
 * ports that another Keel's database knows nothing of.
 */
let nextPortBlock = Math.floor(Math.random() * 100);
export function ownPortRange(): string {
  const lo = 28000 + (nextPortBlock++ % 100) * 90;
  return `${lo}-${lo + 89}`;
}

/** A workspace-API token for `sub`, signed with the test secret. */
export function testToken(sub = 'alice', o: { role?: 'admin'; ttlSeconds?: number } = {}): string {
  return mintToken(TEST_SECRET, { sub, ttlSeconds: o.ttlSeconds ?? 3600, role: o.role });
}

/** Every service's port as `0`: each listens on a free one and logs its URL. */
export const freePortsEnv = () => ({
  APP_WORKSPACES_PORT: '0',
  APP_CATALOG_PORT: '0',
  APP_SOURCES_PORT: '0',
  APP_WORKERS_PORT: '0',
  APP_IDENTITY_PORT: '0',
  APP_PREVIEW_PORT: '0',
  APP_PLAYBACK_PORT: '0',
});

export type ApiCall = (service: ServiceName, path: string, init?: RequestInit & { as?: string | null; json?: unknown }) => Promise<Response>;

/** fetch against the services at `urls` with a Bearer token for `as` (default alice; `admin` has the admin role); `json` is sent as the body. */
export function apiAt(urls: Partial<Record<ServiceName, string>>): ApiCall {
  return (service, path, init = {}) => {
    const { as = 'alice', json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (as !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${testToken(as, as === 'admin' ? { role: 'admin' } : {})}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(urls[service] + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
  };
}

/** A connection of a test's own to a platform's database, past the services: `?` parameters on both. */
export interface DirectConnection {
  all<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/** The database a platform keeps its state in: its PostgreSQL database when it has one, else its SQLite file. */
export function directConnection(p: { dataDir: string; databaseUrl?: string }): DirectConnection {
  if (p.databaseUrl) {
    const sql = new SQL(p.databaseUrl, { max: 1 });
    return {
      all: async (text, params = []) => {
        let n = 0;
        return [...(await sql.unsafe(text.replace(/\?/g, () => `$${++n}`), params as never[]))];
      },
      close: () => sql.close(),
    };
  }
  const db = new Database(join(p.dataDir, 'keel.db'));
  db.exec('PRAGMA busy_timeout = 5000');
  return {
    all: async (text, params = []) => db.prepare(text).all(...(params as never[])) as never[],
    close: async () => db.close(),
  };
}

/** True when this run keeps state in PostgreSQL (`KEEL_TEST_DATABASE=postgres`, the test command's second pass). */
export const onPostgres = () => process.env.KEEL_TEST_DATABASE === 'postgres';

/**
 * A fresh database in the test run's PostgreSQL cluster, as the URL to give APP_DATABASE_URL; drop()
 * removes it (closing whatever still holds it).
 */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = requireTestEnv('KEEL_TEST_POSTGRES_URL');
  const name = `keel_${crypto.randomUUID().replaceAll('-', '')}`;
  const sql = new SQL(admin, { max: 1 });
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await sql.close();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const sql = new SQL(admin, { max: 1 });
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await sql.close();
      }
    },
  };
}

async function forgetDatabase(dataDir: string) {
  await databasesOf.get(dataDir)?.drop();
  databasesOf.delete(dataDir);
}

/**
 * The database of a test whose platforms follow one another (a restart) or run side by side: on the
 * PostgreSQL pass a fresh database, given to each platform as `env`; on SQLite nothing (the data dir
 * they share holds it).
 */
export async function sharedDatabase(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (!onPostgres()) return { env: {}, drop: async () => {} };
  const database = await freshPostgresDatabase();
  return { env: { APP_DATABASE_URL: database.url }, drop: database.drop };
}

/**
 * The PostgreSQL database of each data dir this run started a platform on: on the PostgreSQL pass a
 * data dir and its database go together, so a platform started again on a kept data dir (a restart)
 * finds the state the one before it left.
 */
const databasesOf = new Map<string, Awaited<ReturnType<typeof freshPostgresDatabase>>>();

export async function startTestPlatform(opts: { services: ServiceName[]; env?: Record<string, string>; dataDir?: string }): Promise<TestPlatform> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'keel-test-'));
  const database = onPostgres() && !opts.env?.APP_DATABASE_URL ? (databasesOf.get(dataDir) ?? (await freshPostgresDatabase())) : undefined;
  if (database) databasesOf.set(dataDir, database);
  const env: Record<string, string | undefined> = {
    ...process.env,
    NODE_ENV: 'test',
    APP_DATA_DIR: dataDir,
    APP_API_SECRET: TEST_SECRET,
    APP_SERVICES: opts.services.join(','),
    ...freePortsEnv(),
    APP_WORKSPACE_PORT_RANGE: ownPortRange(),
    ...(database && { APP_DATABASE_URL: database.url }),
    ...opts.env,
  };
  const platform = await startPlatform(env).catch(async (e) => {
    if (database && !opts.dataDir) await forgetDatabase(dataDir);
    throw e;
  });
  return {
    ...platform,
    dataDir,
    databaseUrl: env.APP_DATABASE_URL,
    url: (s) => {
      const u = platform.urls[s];
      if (!u) throw new Error(`service ${s} is not running in this test platform`);
      return u;
    },
    token: testToken,
    api: apiAt(platform.urls),
    async close() {
      await platform.stop();
      // A data dir the test named outlives this platform, and so does its database.
      if (!opts.dataDir) {
        await forgetDatabase(dataDir);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
