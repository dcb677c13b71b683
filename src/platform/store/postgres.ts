// The PostgreSQL Store: a pool, migrations under an advisory lock, retried conflicts, the change
// counter kept by triggers and heard by LISTEN (changes.ts).
import { SQL } from 'bun';
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { BunSQLDatabase } from 'drizzle-orm/bun-sql';
import { postgresMigrations } from '../../../drizzle/migrations';
import { causes, onWrites, type Orm, type Store } from './store';
import { listenForChanges } from './changes';

/** A lock number all Keel processes share, so that one migrates while the others wait. */
const MIGRATION_LOCK = 0x6b65656c; // "keel"

/**
 * PostgreSQL at `url`: a pool of connections (Bun's own client), the migrations applied under an
 * advisory lock (several processes may start at once), and the change counter kept by triggers.
 */
export async function openPostgresStore(url: string): Promise<Store> {
  const client = new SQL(url, { max: 10, idleTimeout: 60 });
  // The PostgreSQL driver's ORM loads only when a PostgreSQL URL is configured.
  const { drizzle: drizzlePostgres } = await import('drizzle-orm/bun-sql');
  const orm = drizzlePostgres({ client });
  try {
    const lock = await client.reserve();
    try {
      await lock`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
      await migrate(orm);
      await countChanges(orm);
    } finally {
      await lock`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => undefined);
      lock.release();
    }
  } catch (e) {
    await client.close();
    throw e;
  }
  const changes = await listenForChanges(client, async () => {
    const [row] = await client`SELECT coalesce(sum(n), 0)::text AS v FROM keel_changes`;
    return row.v as string;
  });
  // This process's own writes move the counter when they are answered, not when their notification
  // comes back: the caller's next read must see them.
  onWrites(orm, (prepared) => {
    for (const method of ['execute', 'all'] as const) {
      const run = prepared[method]?.bind(prepared);
      if (run) prepared[method] = (...args) => (run(...args) as Promise<unknown>).finally(changes.moved);
    }
  });
  const claims: Awaited<ReturnType<typeof client.reserve>>[] = [];
  return {
    dialect: 'postgres',
    orm: orm as unknown as Orm,
    transaction: (body) => withRetries(() => orm.transaction((tx) => body(tx as unknown as Orm))).finally(changes.moved),
    async lock(tx, key) {
      await (tx as unknown as typeof orm).execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
    },
    async claim(key) {
      // A session lock on a connection of its own, kept out of the pool until close().
      const conn = await client.reserve();
      const [row] = await conn`SELECT pg_try_advisory_lock(hashtextextended(${key}, 0)) AS ok`;
      if (row.ok) claims.push(conn);
      else conn.release();
      return row.ok as boolean;
    },
    version: changes.version,
    isUniqueViolation: postgresUniqueViolation,
    // FOR UPDATE locks the row the subquery picks until the claim commits (without it two claims pick
    // the same row, and both update it); SKIP LOCKED lets a concurrent claim take the next row instead
    // of waiting for this one and then finding it no longer due.
    forClaim: (select) => (select as unknown as { for(strength: 'update', config: { skipLocked: true }): unknown }).for('update', { skipLocked: true }) as typeof select,
    async close() {
      await changes.close();
      for (const conn of claims.splice(0)) conn.release();
      await client.close();
    },
  };
}

/**
 * Conflicts that a second run of the same body resolves: a unique key another process inserted
 * between this body's look and its insert (two catalog replicas indexing one file), a serialization
 * failure, a deadlock. The body is run again from its start, and then sees the other's committed row;
 * bodies touch nothing but the database, so running one again is safe.
 */
const RETRIED = new Set(['23505', '40001', '40P01']);
const ATTEMPTS = 3;

async function withRetries<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (e) {
      if (attempt >= ATTEMPTS || !RETRIED.has(sqlState(e) ?? '')) throw e;
    }
  }
}

/**
 * PostgreSQL: SQLSTATE 23505, with the table's name, and a detail "Key (column[, column...])=(...)"
 * naming the index's columns (drizzle's constraint `table_column_unique` when the detail is absent).
 */
function postgresUniqueViolation(e: unknown, on?: { table: string; column: string }): boolean {
  for (const x of causes(e)) {
    if (x.errno !== '23505') continue;
    if (!on) return true;
    const columns = /^Key \((.*?)\)=/.exec(String(x.detail ?? ''))?.[1];
    if (columns !== undefined) return x.table === on.table && columns === on.column;
    return x.constraint === `${on.table}_${on.column}_unique`;
  }
  return false;
}

/** The SQLSTATE of a PostgreSQL error, also when drizzle wrapped it (its `cause`). */
function sqlState(e: unknown): string | undefined {
  for (const x of causes(e)) if (typeof x.errno === 'string' && /^[0-9A-Z]{5}$/.test(x.errno)) return x.errno;
  return undefined;
}

/** drizzle's own migrator fed from the embedded copy (as db.ts does for SQLite). */
async function migrate(orm: BunSQLDatabase) {
  const metas = postgresMigrations.map((m) => ({
    sql: m.sql.split('--> statement-breakpoint'),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash('sha256').update(m.sql).digest('hex'),
  }));
  const internal = orm as unknown as { dialect: { migrate: Function }; session: unknown };
  await internal.dialect.migrate(metas, internal.session, {});
}

/**
 * The change counter on PostgreSQL: a statement trigger on every table adds one to that table's row
 * of keel_changes, in the writing transaction, so the sum moves exactly when the write commits (a
 * sequence would move before the commit, and a read between the two would cache old rows under the
 * new value). One row per table keeps writers to different tables off each other's row lock.
 * Checked at every start, so a table a later migration adds gets its trigger too.
 */
async function countChanges(orm: BunSQLDatabase) {
  await orm.execute(sql`CREATE TABLE IF NOT EXISTS keel_changes (table_name text PRIMARY KEY, n bigint NOT NULL)`);
  await orm.execute(
    sql.raw(`CREATE OR REPLACE FUNCTION keel_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO keel_changes AS c VALUES (TG_TABLE_NAME, 1) ON CONFLICT (table_name) DO UPDATE SET n = c.n + 1;
  PERFORM pg_notify('keel_changes', '');
  RETURN NULL;
END $$`),
  );
  const tables = await orm.execute<{ name: string }>(
    sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'keel_changes'`,
  );
  for (const { name } of tables) {
    const table = sql.identifier(name);
    await orm.execute(sql`CREATE OR REPLACE TRIGGER keel_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION keel_changed()`);
  }
}
