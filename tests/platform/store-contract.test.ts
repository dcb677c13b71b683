// The Store's contract (platform/store/), the same cases on SQLite and on PostgreSQL in every run:
// what the two databases do differently is a Store method, and feature code relies on each of them
// answering alike. Transactions: a rollback undoes only its own statements, nobody reads what was
// not committed, a body may throw anything, and the change counter moves with the commit.
// Unique violations are told apart by column; concurrent claims take different rows; a partial
// index on a boolean is used by the queries written against it. The tables are Keel's own (the
// store migrates them), so each case runs on what the features use.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, asc, eq, sql, type SQL } from 'drizzle-orm';
import { getTableConfig as getPgTableConfig, PgDialect } from 'drizzle-orm/pg-core';
import { getTableConfig as getSqliteTableConfig, SQLiteSyncDialect } from 'drizzle-orm/sqlite-core';
import { openDb } from '../../src/platform/db';
import type { Dialect } from '../../src/platform/db-schema';
import { openPostgresStore, sqliteStore, type Orm, type Store } from '../../src/platform/store';
import { workersTables } from '../../src/services/workers/workers.tables';
import { webhooksTables } from '../../src/services/workspaces/webhooks/webhooks.tables';
import { workspacesTables, type WorkspaceRow } from '../../src/services/workspaces/workspaces.tables';
import { freshPostgresDatabase } from '../helpers/platform';

describe.each(['sqlite', 'postgres'] as Dialect[])('on %s', (dialect) => {
  let store: Store;
  let dataDir: string;
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;

  /** Runs raw `q` on `orm` (the store's, or a transaction's) and answers its rows. */
  async function query(orm: Orm, q: SQL): Promise<Record<string, unknown>[]> {
    if (dialect === 'sqlite') return orm.all(q);
    return [...((await (orm as unknown as { execute(q: SQL): Promise<Iterable<Record<string, unknown>>> }).execute(q)) ?? [])];
  }
  const insert = (orm: Orm, id: string) => query(orm, sql`INSERT INTO store_probe (id) VALUES (${id})`);
  const ids = async (orm: Orm = store.orm) => (await query(orm, sql`SELECT id FROM store_probe ORDER BY id`)).map((r) => r.id);

  /** A transaction that wrote `id` and stays open until `end(error?)`: rolled back when given one. */
  function openTransaction(id: string) {
    let end!: (error?: unknown) => void;
    const ended = new Promise<{ error?: unknown } | undefined>((resolve) => (end = (error) => resolve(error === undefined ? undefined : { error })));
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const done = store.transaction(async (tx) => {
      await insert(tx, id);
      wrote();
      const outcome = await ended;
      if (outcome) throw outcome.error;
    });
    return { written, end, done };
  }

  const open = async () => (database ? openPostgresStore(database.url) : sqliteStore(openDb(dataDir)));

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'keel-store-contract-'));
    if (dialect === 'postgres') database = await freshPostgresDatabase();
    store = await open();
    await query(store.orm, sql`CREATE TABLE store_probe (id text PRIMARY KEY)`);
    // Opened again, as after a migration: PostgreSQL's change counter learns of the new table at start.
    await store.close();
    store = await open();
  });
  afterAll(async () => {
    await store.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  describe('transactions', () => {
    test('a transaction that throws leaves the writes made outside it meanwhile committed', async () => {
      await query(store.orm, sql`DELETE FROM store_probe`);
      const t = openTransaction('inside');
      await t.written;
      const outside = insert(store.orm, 'outside');
      await Bun.sleep(20); // the outside write may be answered before the rollback (PostgreSQL) or wait for it (SQLite)
      t.end(new Error('refused'));
      await expect(t.done).rejects.toThrow('refused');
      await outside; // answered as done
      expect(await ids()).toEqual(['outside']);
    });

    test('a read outside an open transaction never sees its uncommitted rows', async () => {
      await query(store.orm, sql`DELETE FROM store_probe`);
      const t = openTransaction('pending');
      await t.written;
      expect(await ids()).toEqual([]);
      t.end();
      await t.done;
      expect(await ids()).toEqual(['pending']);
    });

    test('a body may throw anything: the value thrown comes back as is and its writes are undone', async () => {
      await query(store.orm, sql`DELETE FROM store_probe`);
      const thrown = [{ code: 'REFUSED' }, 'a string', 42, null];
      for (const [i, value] of thrown.entries()) {
        const t = openTransaction(`thrown-${i}`);
        await t.written;
        t.end(value);
        let caught: unknown = 'nothing';
        await t.done.catch((e) => (caught = e));
        expect(caught).toBe(value);
      }
      await store.transaction((tx) => insert(tx, 'kept'));
      expect(await ids()).toEqual(['kept']);
    });

    test('a rolled-back transaction leaves no row of its own, and the next one runs', async () => {
      await query(store.orm, sql`DELETE FROM store_probe`);
      await expect(
        store.transaction(async (tx) => {
          await insert(tx, 'undone');
          throw new Error('anything');
        }),
      ).rejects.toThrow('anything');
      await store.transaction((tx) => insert(tx, 'kept'));
      expect(await ids()).toEqual(['kept']);
    });

    test('writes made outside while a transaction is open land after it, in order', async () => {
      await query(store.orm, sql`DELETE FROM store_probe`);
      const t = openTransaction('a-inside');
      await t.written;
      const writes = Promise.all([insert(store.orm, 'b-outside'), insert(store.orm, 'c-outside')]);
      t.end();
      await Promise.all([t.done, writes]);
      expect(await ids()).toEqual(['a-inside', 'b-outside', 'c-outside']);
    });

    test('the change counter moves when a transaction commits, not when it writes', async () => {
      await query(store.orm, sql`DELETE FROM store_probe`);
      await Bun.sleep(50); // (on PostgreSQL, until the notification of that delete is back too)
      const before = await store.version();
      const t = openTransaction('counted');
      await t.written;
      await Bun.sleep(20);
      const during = await store.version();
      t.end();
      await t.done;
      expect(during).toBe(before);
      expect(await store.version()).not.toBe(before);
    });
  });

  describe('isUniqueViolation', () => {
    let n = 0;
    /** A workspace row whose name and ports are its own unless given. */
    function workspace(over: Partial<WorkspaceRow> = {}): WorkspaceRow {
      n++;
      const at = new Date(0).toISOString();
      return {
        id: `ws-${dialect}-${n}`, name: `name-${n}`, owner: 'owner', template: 'minimal', type: 'persistent', status: 'creating',
        port: 40000 + n * 3, sshPort: 40001 + n * 3, rdpPort: 40002 + n * 3, containerId: null, engine: null, volume: `vol-${n}`,
        provisioned: false, repoUrl: null, repoBranch: null, reason: null, autoStopMinutes: 0, stopReason: null, snapshotId: null,
        createdAt: at, updatedAt: at, ...over,
      };
    }
    /** The error of inserting `row` (a query, or the same in a transaction). */
    async function refusal(row: WorkspaceRow, inTransaction = false): Promise<unknown> {
      const { workspaces } = workspacesTables(store.dialect);
      const run = (orm: Orm) => orm.insert(workspaces).values(row);
      try {
        await (inTransaction ? store.transaction(async (tx) => void (await run(tx))) : run(store.orm));
      } catch (e) {
        return e;
      }
      throw new Error('the insert was not refused');
    }
    const on = (column: string) => ({ table: 'workspaces_workspaces', column });

    test('a taken unique column is a violation on that column and on no other', async () => {
      const { workspaces } = workspacesTables(store.dialect);
      const first = workspace();
      await store.orm.insert(workspaces).values(first);
      const e = await refusal(workspace({ name: first.name }));
      expect(store.isUniqueViolation(e)).toBe(true);
      expect(store.isUniqueViolation(e, on('name'))).toBe(true);
      expect(store.isUniqueViolation(e, on('port'))).toBe(false);
      expect(store.isUniqueViolation(e, { table: 'identity_actors', column: 'name' })).toBe(false);

      const p = await refusal(workspace({ port: first.port }), true);
      expect(store.isUniqueViolation(p, on('port'))).toBe(true);
      expect(store.isUniqueViolation(p, on('name'))).toBe(false);
    });

    test('a taken primary key is a violation', async () => {
      const { workspaces } = workspacesTables(store.dialect);
      const first = workspace();
      await store.orm.insert(workspaces).values(first);
      expect(store.isUniqueViolation(await refusal(workspace({ id: first.id })))).toBe(true);
    });

    test('a key taken in a partial unique index is a violation on its column', async () => {
      const { workersJobs } = workersTables(store.dialect);
      const job = (id: string) => ({
        id, type: 'probe', key: 'same-key', payload: {}, status: 'queued', attempts: 0, maxAttempts: 1, runAt: 0,
        cancelRequested: false, progress: {}, createdAt: 0, updatedAt: 0,
      });
      await store.orm.insert(workersJobs).values(job('job-key-1'));
      let error: unknown;
      await store.orm.insert(workersJobs).values(job('job-key-2')).catch((e) => (error = e));
      expect(store.isUniqueViolation(error)).toBe(true);
      expect(store.isUniqueViolation(error, { table: 'workers_jobs', column: 'key' })).toBe(true);
      expect(store.isUniqueViolation(error, { table: 'workers_jobs', column: 'id' })).toBe(false);
      await store.orm.delete(workersJobs);
    });

    test('other errors are not violations, wrapped or not', async () => {
      const missing = await refusal({ ...workspace(), volume: null } as unknown as WorkspaceRow);
      expect(store.isUniqueViolation(missing)).toBe(false);
      expect(store.isUniqueViolation(new Error('UNIQUE in a message'))).toBe(false);
      for (const value of [undefined, null, 'text', 23505, { errno: 'x' }]) expect(store.isUniqueViolation(value)).toBe(false);
      const { workspaces } = workspacesTables(store.dialect);
      const first = workspace();
      await store.orm.insert(workspaces).values(first);
      const wrapped = new Error('while creating', { cause: await refusal(workspace({ name: first.name })) });
      expect(store.isUniqueViolation(wrapped, on('name'))).toBe(true);
    });
  });

  describe('forClaim', () => {
    const { workersJobs } = workersTables(dialect);
    const queue = async (count: number) => {
      await store.orm.delete(workersJobs);
      const rows = Array.from({ length: count }, (_, i) => ({
        id: `job-${String(i).padStart(3, '0')}`, type: 'probe', key: null, payload: {}, status: 'queued', attempts: 0, maxAttempts: 1,
        runAt: i, cancelRequested: false, progress: {}, createdAt: 0, updatedAt: 0,
      }));
      await store.orm.insert(workersJobs).values(rows);
    };
    /** One claim, as the workers service makes it: one UPDATE whose subquery picks the oldest queued job. */
    async function claim(owner: string, orm: Orm = store.orm): Promise<string | undefined> {
      const next = orm.select({ id: workersJobs.id }).from(workersJobs).where(eq(workersJobs.status, 'queued')).orderBy(asc(workersJobs.runAt)).limit(1);
      const [row] = await orm
        .update(workersJobs)
        .set({ status: 'running', leaseOwner: owner })
        .where(eq(workersJobs.id, store.forClaim(next)))
        .returning({ id: workersJobs.id });
      return row?.id;
    }

    test('concurrent claims each take a different row, and none comes back empty while rows are left', async () => {
      await queue(20);
      const claimed = await Promise.all(Array.from({ length: 20 }, (_, i) => claim(`claimer-${i}`)));
      expect(claimed.filter((id) => id === undefined)).toEqual([]);
      expect(new Set(claimed).size).toBe(20);
      const owners = await store.orm.select({ owner: workersJobs.leaseOwner }).from(workersJobs).where(eq(workersJobs.status, 'running'));
      expect(new Set(owners.map((r) => r.owner)).size).toBe(20);
      expect(await claim('late')).toBeUndefined();
    });

    test('a claim made while another is still uncommitted takes the next row', async () => {
      await queue(2);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let first!: (id: string | undefined) => void;
      const firstClaimed = new Promise<string | undefined>((resolve) => (first = resolve));
      const inTransaction = store.transaction(async (tx) => {
        first(await claim('slow', tx));
        await held;
      });
      const a = await firstClaimed;
      const b = claim('fast'); // PostgreSQL: skips the locked row at once; SQLite: waits for the transaction's turn
      await Bun.sleep(20);
      release();
      await inTransaction;
      expect(a).toBe('job-000');
      expect(await b).toBe('job-001');
    });
  });

  describe('partial index terms', () => {
    test("a query for a boolean column's true rows is planned on a partial index written with isTrue", async () => {
      const { deliveries } = webhooksTables(store.dialect);
      // The index as the table definition writes it for this database (what drizzle-kit migrates),
      // alone on the table: the migrated ones are dropped from this test's database.
      const config = dialect === 'sqlite' ? getSqliteTableConfig(deliveries) : getPgTableConfig(deliveries as never);
      const due = config.indexes.find((i) => i.config.name === 'webhooks_deliveries_due_idx')!;
      const predicate = (dialect === 'sqlite' ? new SQLiteSyncDialect() : new PgDialect()).sqlToQuery(due.config.where!).sql;
      expect(predicate).toContain('head');
      for (const name of ['webhooks_deliveries_due_idx', 'webhooks_deliveries_registration_due_idx']) await query(store.orm, sql.raw(`DROP INDEX ${name}`));
      await query(store.orm, sql.raw(`CREATE INDEX probe_due_idx ON webhooks_deliveries (next_attempt_at) WHERE ${predicate}`));

      const q = store.orm
        .select({ seq: deliveries.seq })
        .from(deliveries)
        .where(and(eq(deliveries.status, 'pending'), eq(deliveries.head, true)))
        .orderBy(asc(deliveries.nextAttemptAt))
        .limit(1);
      const explain = (orm: Orm) => query(orm, sql`${sql.raw(dialect === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN')} ${q.getSQL()}`);
      const plan = JSON.stringify(
        dialect === 'sqlite'
          ? await explain(store.orm)
          : await store.transaction(async (tx) => {
              // PostgreSQL plans an empty table as a scan: ask it to prefer any usable index.
              await query(tx, sql`SET LOCAL enable_seqscan = off`);
              return explain(tx);
            }),
      );
      expect(plan).toContain('probe_due_idx');
    });
  });
});
