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
// SQLite-only or PostgreSQL-only SQL stays in sqlite.ts, postgres.ts and changes.ts beside this file, and in db.ts.
import type { Db } from '../db';
import type { Dialect } from '../db-schema';

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

/** What drizzle prepares for one statement, whichever the driver: the methods that run it. */
export type Prepared = Record<'run' | 'all' | 'get' | 'values' | 'execute', ((...args: unknown[]) => unknown) | undefined>;

/** A statement that only reads (drizzle writes `select` first): it may run beside an open transaction. */
const READS_ONLY = /^\s*select\b/i;

/**
 * Calls `wrap` on each statement `orm` prepares that may write (insert, update, delete, raw SQL),
 * to change how it runs. drizzle's session is internal, as in postgres.ts's migrate(): package.json pins
 * drizzle-orm exactly.
 */
export function onWrites(orm: object, wrap: (prepared: Prepared) => void) {
  const session = (orm as { session: { prepareQuery: (query: { sql: string }, ...rest: unknown[]) => Prepared } }).session;
  const prepare = session.prepareQuery.bind(session);
  session.prepareQuery = (query, ...rest) => {
    const prepared = prepare(query, ...rest);
    if (!READS_ONLY.test(query.sql)) wrap(prepared);
    return prepared;
  };
}

/** An error and the causes it wraps (drizzle wraps the driver's error once), outermost first. */
export function* causes(e: unknown): Generator<{ message?: unknown; code?: unknown; errno?: unknown; constraint?: unknown; table?: unknown; detail?: unknown; cause?: unknown }> {
  let x = e as { cause?: unknown } | undefined;
  for (let depth = 0; x && typeof x === 'object' && depth < 3; x = x.cause as typeof x, depth++) yield x;
}

