// bun:sqlite + Drizzle: one database file under APP_DATA_DIR, WAL mode, migrations applied at start-up.
// Each service reads and writes only the tables of its own *.tables.ts.
import { Database } from 'bun:sqlite';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite';
import { migrations } from '../../drizzle/migrations';

export type Db = BunSQLiteDatabase<Record<string, never>> & { $client: Database };

export function openDb(dataDir: string, file = 'keel.db'): Db {
  const db = connect(join(dataDir, file));
  migrate(db);
  return db;
}

/**
 * One more connection to a database file: the Store's transactions run on one of their own, so that
 * what they have not committed is neither seen nor undone by statements outside (store/sqlite.ts).
 */
export function connect(path: string): Db {
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec('PRAGMA journal_mode = WAL');
  sqlite.exec('PRAGMA synchronous = NORMAL');
  sqlite.exec('PRAGMA foreign_keys = ON');
  sqlite.exec('PRAGMA busy_timeout = 5000');
  // A commit on one connection empties the other's page cache; mapped, the pages are read again without a copy.
  sqlite.exec('PRAGMA mmap_size = 268435456');
  return drizzle({ client: sqlite }) as Db;
}

/**
 * drizzle's own migrator, fed from the embedded copy instead of the migrations folder. It is drizzle's
 * internal `dialect.migrate`, not a public API: package.json pins drizzle-orm exactly for that reason.
 */
function migrate(db: Db) {
  const metas = migrations.map((m) => ({
    sql: m.sql.split('--> statement-breakpoint'),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash('sha256').update(m.sql).digest('hex'),
  }));
  (db as unknown as { dialect: { migrate: Function }; session: unknown }).dialect.migrate(metas, (db as any).session, {});
}
