// PostgreSQL's change counter by LISTEN/NOTIFY (platform/store/): two stores on one database stand
// for two Keel processes. A cached read costs no round trip, another process's write reaches it by
// notification, and a dropped listening connection never leaves a reader on stale data.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { SQL } from 'bun';
import { sql } from 'drizzle-orm';
import { openPostgresStore, type Store } from '../../src/platform/store';
import { freshPostgresDatabase, requireTestEnv } from '../helpers/platform';

let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
let reader: Store;
let writer: Store;

const execute = (store: Store, q: ReturnType<typeof sql>) => (store.orm as unknown as { execute(q: unknown): Promise<unknown> }).execute(q);
const insert = (store: Store, id: string) => execute(store, sql`INSERT INTO store_probe (id) VALUES (${id})`);

/** Polls `reader`'s version until it is not `from`; how long that took in ms, or undefined past `ms`. */
async function movedWithin(from: string, ms: number): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    if ((await reader.version()) !== from) return performance.now() - t0;
    await Bun.sleep(10);
  }
  return undefined;
}

beforeAll(async () => {
  database = await freshPostgresDatabase();
  const first = await openPostgresStore(database.url);
  await execute(first, sql`CREATE TABLE store_probe (id text PRIMARY KEY)`);
  await first.close();
  // Opened after the table exists: its trigger is put in place at start.
  reader = await openPostgresStore(database.url);
  writer = await openPostgresStore(database.url);
});
afterAll(async () => {
  await reader.close();
  await writer.close();
  await database.drop();
});

test('a read of the counter answers at once, without a round trip, while the store listens', async () => {
  await Bun.sleep(50);
  const v = reader.version();
  expect(typeof v).toBe('string');
  expect(reader.version()).toBe(v);
});

test("another process's committed write moves the counter by notification within half a second", async () => {
  await Bun.sleep(50);
  const before = await reader.version();
  await insert(writer, 'by-notification');
  expect(await movedWithin(before, 500)).toBeNumber();
});

test('a write made while the listening connection was cut still moves the counter within three seconds', async () => {
  await Bun.sleep(50);
  const before = await reader.version();
  const admin = new SQL(requireTestEnv('KEEL_TEST_POSTGRES_URL'), { max: 1 });
  try {
    // Every listening connection on the database is cut (the writer's too), then a write commits at once.
    const cut = await admin`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = ${new URL(database.url).pathname.slice(1)} AND query ILIKE 'LISTEN%'`;
    expect(cut.length).toBeGreaterThanOrEqual(1);
  } finally {
    await admin.close();
  }
  await insert(writer, 'while-cut');
  expect(await movedWithin(before, 3000)).toBeNumber();
});
