// The Store's contract (platform/store.ts), on the database of the run (SQLite, or PostgreSQL on the
// KEEL_TEST_DATABASE=postgres pass): a transaction's rollback undoes only its own statements, nobody
// reads what it has not committed, and the change counter moves with the commit, not before.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type SQL } from 'drizzle-orm';
import { openDb } from '../../src/platform/db';
import { openPostgresStore, sqliteStore, type Orm, type Store } from '../../src/platform/store';
import { freshPostgresDatabase, onPostgres } from '../helpers/platform';

let store: Store;
let dataDir: string;
let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;

/** Runs `query` on `orm` (the store's, or a transaction's) and answers its rows. */
async function query(orm: Orm, q: SQL): Promise<Record<string, unknown>[]> {
  if (store.dialect === 'sqlite') return orm.all(q);
  return [...((await (orm as unknown as { execute(q: SQL): Promise<Iterable<Record<string, unknown>>> }).execute(q)) ?? [])];
}
const insert = (orm: Orm, id: string) => query(orm, sql`INSERT INTO store_probe (id) VALUES (${id})`);
const ids = async (orm: Orm = store.orm) => (await query(orm, sql`SELECT id FROM store_probe ORDER BY id`)).map((r) => r.id);

/** A transaction that wrote `id` and stays open until `end(error?)`: rolled back when given an error. */
function openTransaction(id: string) {
  let end!: (error?: Error) => void;
  const ended = new Promise<Error | undefined>((resolve) => (end = resolve));
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => (wrote = resolve));
  const done = store.transaction(async (tx) => {
    await insert(tx, id);
    wrote();
    const error = await ended;
    if (error) throw error;
  });
  return { written, end, done };
}

const open = async () => (database ? openPostgresStore(database.url) : sqliteStore(openDb(dataDir)));

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'keel-store-'));
  if (onPostgres()) database = await freshPostgresDatabase();
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

test('a write made outside after another lands in order while transactions are open', async () => {
  await query(store.orm, sql`DELETE FROM store_probe`);
  const t = openTransaction('a-inside');
  await t.written;
  const writes = Promise.all([insert(store.orm, 'b-outside'), insert(store.orm, 'c-outside')]);
  t.end();
  await Promise.all([t.done, writes]);
  expect(await ids()).toEqual(['a-inside', 'b-outside', 'c-outside']);
});
