// Where services keep their state: the embedded SQLite file (the default) or PostgreSQL
// (APP_DATABASE_URL=postgres://...), behind one handle. Code written against a Store runs on both:
//   - tables come from the service's definer for `store.dialect` (platform/db-schema.ts);
//   - every query is awaited (drizzle's builders are thenables on both); SQLite's synchronous
//     `.get()`, `.all()`, `.run()` and raw `$client` calls do not exist on PostgreSQL;
//   - a transaction is `store.transaction(async (tx) => ...)`: its body runs its queries on `tx`
//     (never on `store.orm`: what it wrote is not visible there until the commit, and on SQLite a
//     write there waits for the transaction to end) and may throw anything. What it wrote is seen
//     by nobody else before the commit, and its rollback undoes nothing but its own statements.
//     Bodies await only their own queries (no bus, no engine, no fetch) and stay short: on SQLite,
//     writes take turns with them.
//   - what the two databases do differently is a Store method with one implementation each
//     (isUniqueViolation, forClaim; a partial index's terms are db-schema.ts's), checked by one
//     contract suite on both (tests/platform/store-contract.test.ts). No feature asks which
//     database it runs on.
// SQLite-only or PostgreSQL-only SQL stays in this file and in db.ts.
import { SQL } from 'bun';
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { BunSQLDatabase } from 'drizzle-orm/bun-sql';
import { postgresMigrations } from '../../drizzle/migrations';
import { connect, type Db } from './db';
import { dbVersion } from './db-version';
import type { Dialect } from './db-schema';

/** Drizzle over either database, typed with SQLite's builders (see the rules above). */
export type Orm = Omit<Db, '$client'>;

export interface Store {
  dialect: Dialect;
  orm: Orm;
  /**
   * Runs `body` in one transaction: committed when it resolves, rolled back when it throws. No other
   * request sees its rows before the commit, and its rollback never undoes another request's write.
   */
  transaction<T>(body: (tx: Orm) => Promise<T>): Promise<T>;
  /**
   * Inside a transaction: waits until no other transaction holds `key`, and holds it until this one
   * ends. For a check and the write it guards (a quota count and the insert), which two processes
   * must not interleave. SQLite's transactions already take turns: nothing to do there.
   */
  lock(tx: Orm, key: string): Promise<void>;
  /**
   * Claims `key` for as long as this process keeps the store open; false when another process holds
   * it. For what one process at a time may run on a database (the workspaces service: its containers,
   * queues and streams live in the process). SQLite's file is this machine's: always true.
   */
  claim(key: string): Promise<boolean>;
  /**
   * The change counter: a value that moves whenever a committed write could change what a read
   * answers (platform/db-version.ts). Read before a cached answer is built.
   */
  version(): string | Promise<string>;
  /**
   * True when `e` (as thrown by a query, possibly wrapped by drizzle) is a unique-key violation; with
   * `on`, only one on that table's column (a `.unique()` column or a unique index on that one column).
   * For the few places that turn a lost race into an answer (409, or a row that already exists).
   */
  isUniqueViolation(e: unknown, on?: { table: string; column: string }): boolean;
  /**
   * `select` (a subquery picking the row an UPDATE claims: `update(t).set(...).where(eq(t.id,
   * store.forClaim(select)))`) made safe for concurrent claims: each claim of the same moment takes a
   * different row, none waits for another's and none comes back empty while one is left.
   */
  forClaim<Q>(select: Q): Q;
  close(): Promise<void>;
}

/**
 * Writes in turns: each transaction, and each write made outside one while a transaction is open or
 * waiting, runs when the one before it has ended. With nothing open, a write runs at once.
 */
function createWriteTurns() {
  let tail: Promise<unknown> = Promise.resolve();
  let taken = 0;
  return {
    get idle() {
      return taken === 0;
    },
    take<T>(run: () => T | Promise<T>): Promise<T> {
      taken++;
      const turn = tail.then(run).finally(() => taken--);
      tail = turn.catch(() => undefined);
      return turn;
    },
  };
}

/** What drizzle prepares for one statement, whichever the driver: the methods that run it. */
type Prepared = Record<'run' | 'all' | 'get' | 'values' | 'execute', ((...args: unknown[]) => unknown) | undefined>;

/** A statement that only reads (drizzle writes `select` first): it may run beside an open transaction. */
const READS_ONLY = /^\s*select\b/i;

/**
 * Calls `wrap` on each statement `orm` prepares that may write (insert, update, delete, raw SQL),
 * to change how it runs. drizzle's session is internal, as in migrate() below: package.json pins
 * drizzle-orm exactly.
 */
function onWrites(orm: object, wrap: (prepared: Prepared) => void) {
  const session = (orm as { session: { prepareQuery: (query: { sql: string }, ...rest: unknown[]) => Prepared } }).session;
  const prepare = session.prepareQuery.bind(session);
  session.prepareQuery = (query, ...rest) => {
    const prepared = prepare(query, ...rest);
    if (!READS_ONLY.test(query.sql)) wrap(prepared);
    return prepared;
  };
}

/**
 * The SQLite database of the data dir (db.ts) as a Store; close() closes the file. Transactions run
 * on a second connection to the same file (WAL): statements outside one run on the first and see only
 * what was committed, and a rollback there cannot reach them. SQLite lets one connection write at a
 * time, and bun:sqlite waits for a lock by blocking the thread (which would stop the very transaction
 * it waits for), so a write outside waits its turn (createWriteTurns) while a transaction is open;
 * reads never wait.
 */
export function sqliteStore(db: Db): Store {
  const client = db.$client;
  const txDb = connect(client.filename);
  const txClient = txDb.$client;
  const turns = createWriteTurns();
  let inTurn = false; // a write outside a transaction is running in its turn (drizzle's all() calls values())
  onWrites(db, (prepared) => {
    for (const method of ['run', 'all', 'get', 'values'] as const) {
      const run = prepared[method]!.bind(prepared);
      prepared[method] = (...args) => {
        if (turns.idle || inTurn) return run(...args);
        return turns.take(() => {
          inTurn = true;
          try {
            return run(...args);
          } finally {
            inTurn = false;
          }
        });
      };
    }
  });
  return {
    dialect: 'sqlite',
    orm: db,
    transaction(body) {
      // Drizzle's own SQLite transaction would commit at the body's first await, so BEGIN and COMMIT are ours.
      return turns.take(async () => {
        txClient.exec('BEGIN IMMEDIATE');
        try {
          const result = await body(txDb);
          txClient.exec('COMMIT');
          return result;
        } catch (e) {
          if (txClient.inTransaction) txClient.exec('ROLLBACK');
          throw e;
        }
      });
    },
    lock: async () => {},
    claim: async () => true,
    isUniqueViolation: sqliteUniqueViolation,
    // One writer at a time, and a single statement is atomic: its subquery's row cannot be claimed meanwhile.
    forClaim: (select) => select,
    // On the first connection: its data_version moves when the transactions' connection commits.
    version: dbVersion(client),
    async close() {
      await turns.take(() => undefined);
      txClient.close();
      client.close();
    },
  };
}

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

/** The channel keel_changed() notifies at every committed write (countChanges below). */
const CHANGES_CHANNEL = 'keel_changes';
/** How often the listening connection proves it still delivers: a change is missed at most twice this long. */
const HEARTBEAT_MS = 1000;

/**
 * The change counter without a round trip: every committed write notifies CHANGES_CHANNEL (the
 * trigger of countChanges), and each notification, like each write of this process, moves a number
 * kept here. The listening connection can drop without a word, so it must prove itself: every
 * HEARTBEAT_MS this process notifies itself, and a heartbeat not back by the next one means it is
 * not listening; until one comes back the counter is read from keel_changes again (`readCounter`,
 * coalesced), so a reader is never left on stale data. Notifications arrive in commit order, so a
 * heartbeat back means every change committed before it was heard. Values of the two ways differ in
 * their first letter, and the number moves when listening resumes (what was missed meanwhile).
 */
async function listenForChanges(client: SQL, readCounter: () => Promise<string>) {
  const me = `heartbeat:${crypto.randomUUID()}:`;
  let moves = 0;
  let listening = false;
  let sent = 0;
  let heard = 0;
  const counted = coalescedVersion(readCounter);
  const moved = () => {
    moves++;
  };
  const hear = (resumed: boolean) => {
    if (!listening || resumed) moves++;
    listening = true;
  };
  const subscription = await client.listen(
    CHANGES_CHANNEL,
    (payload) => {
      if (!payload.startsWith('heartbeat:')) moves++;
      else if (payload.startsWith(me) && Number(payload.slice(me.length)) === sent) {
        heard = sent;
        hear(false);
      }
    },
    () => hear(true), // (again after a reconnection: what came meanwhile was not heard)
  );
  const beat = setInterval(() => {
    if (heard !== sent) listening = false;
    client.notify(CHANGES_CHANNEL, me + ++sent).catch(() => {
      listening = false;
    });
  }, HEARTBEAT_MS);
  beat.unref?.();
  return {
    moved,
    version: (): string | Promise<string> => (listening ? `n${moves}` : counted().then((v) => `c${v}.${moves}`)),
    async close() {
      clearInterval(beat);
      await subscription.unlisten().catch(() => undefined);
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
 * SQLite: bun:sqlite's error has code SQLITE_CONSTRAINT_UNIQUE (or _PRIMARYKEY) and the message
 * "UNIQUE constraint failed: table.column[, table.column...]", naming the index's columns.
 */
function sqliteUniqueViolation(e: unknown, on?: { table: string; column: string }): boolean {
  for (const x of causes(e)) {
    const message = String(x.message ?? '');
    const unique = x.code === 'SQLITE_CONSTRAINT_UNIQUE' || x.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || message.includes('UNIQUE constraint failed');
    if (!unique) continue;
    if (!on) return true;
    const columns = /UNIQUE constraint failed: (.*)$/.exec(message)?.[1]?.split(', ');
    return columns?.length === 1 && columns[0] === `${on.table}.${on.column}`;
  }
  return false;
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

/** An error and the causes it wraps (drizzle wraps the driver's error once), outermost first. */
function* causes(e: unknown): Generator<{ message?: unknown; code?: unknown; errno?: unknown; constraint?: unknown; table?: unknown; detail?: unknown; cause?: unknown }> {
  let x = e as { cause?: unknown } | undefined;
  for (let depth = 0; x && typeof x === 'object' && depth < 3; x = x.cause as typeof x, depth++) yield x;
}

/**
 * The change counter read for many requests at once: a read answers every request that arrived
 * before it started, and a request that arrives while one is in flight waits for the next, which
 * starts when that one ends. A write committed before a request arrived is always seen (the read
 * it gets started after it), and under load one round trip serves a whole batch of cached reads
 * instead of one each.
 */
export function coalescedVersion(read: () => Promise<string>): () => Promise<string> {
  let inFlight: Promise<string> | undefined;
  let queued: Promise<string> | undefined;
  const start = () => {
    const p = read().finally(() => {
      if (inFlight === p) inFlight = undefined;
    });
    inFlight = p;
    return p;
  };
  return () => {
    if (!inFlight) return start();
    return (queued ??= inFlight
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      }));
  };
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
