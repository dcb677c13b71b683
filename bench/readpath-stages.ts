// Where the time of one read goes, stage by stage, in-process against the benchmark's own database
// (opened by a second connection): what each request paid before the read-path work (verify the
// HS256 token, count and OFFSET-walk the works, build the objects, validate the response against
// its schema, JSON.stringify) and what a request pays now (a cached token, the data version, a
// seek from a mark on a miss). Medians of many calls, in microseconds.
import { Database } from 'bun:sqlite';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { asc, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/bun-sqlite';
import { t } from 'elysia';
import { createHs256Verifier, mintToken, verifyHs256 } from '../src/platform/auth/workspace-token';
import type { Db } from '../src/platform/db';
import { dbVersion } from '../src/platform/db-version';
import { sqliteStore } from '../src/platform/store';
import { createFixedWindow } from '../src/platform/http/rate-limit';
import { systemClock } from '../src/platform/runtime';
import { WorkSchema } from '../src/services/catalog/catalog.model';
import { toWork } from '../src/services/catalog/catalog.service';
import { catalogWorks } from '../src/services/catalog/catalog.tables';
import { createWorksPager } from '../src/services/catalog/works-pager';
import { WorkspaceList } from '../src/services/workspaces/lifecycle/lifecycle.model';
import { workspaceView } from '../src/services/workspaces/lifecycle/views';
import { workspaces } from '../src/services/workspaces/workspaces.tables';
import { round } from './lib';

/** micros() of an async call, each awaited (the pager answers a promise, as on PostgreSQL). */
async function microsAwaited(fn: () => Promise<unknown>, n: number, runs = 7): Promise<number> {
  for (let i = 0; i < Math.min(n, 100); i++) await fn();
  const per: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn();
    per.push(((performance.now() - t0) * 1000) / n);
  }
  per.sort((a, b) => a - b);
  return round(per[Math.floor(per.length / 2)]!, 2);
}

/** Median µs of `fn` over `runs` timed batches of `n` calls, after a warm-up. */
function micros(fn: () => unknown, n: number, runs = 7): number {
  for (let i = 0; i < Math.min(n, 100); i++) fn();
  const per: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    per.push(((performance.now() - t0) * 1000) / n);
  }
  per.sort((a, b) => a - b);
  return round(per[Math.floor(per.length / 2)]!, 2);
}

export async function stageProfile(dbFile: string, owner: string, secret: string) {
  const client = new Database(dbFile, { readonly: true, strict: true });
  try {
    const db = drizzle({ client }) as unknown as Db;
    const token = mintToken(secret, { sub: owner, ttlSeconds: 600 });
    const verifier = createHs256Verifier(secret);
    verifier.verify(token);
    const limiter = createFixedWindow(60_000, systemClock);
    const version = dbVersion(client);
    const oneSelect = client.prepare('SELECT total_changes(), data_version FROM pragma_data_version()');

    // GET /api/workspaces: the owner's rows (the statement records.ts prepares), their views, check, JSON.
    const own = db.select().from(workspaces).where(eq(workspaces.owner, owner)).orderBy(asc(workspaces.createdAt), asc(workspaces.id)).prepare();
    const rows = own.all();
    const list = { workspaces: rows.map((r) => workspaceView(r, 'localhost', 'bench-code-secret')) };
    const listCheck = TypeCompiler.Compile(WorkspaceList);
    if (!listCheck.Check(list)) throw new Error('the list does not satisfy WorkspaceList');
    const listJson = JSON.stringify(list);

    // GET /works?pageSize=200: count, OFFSET page (the statement before), pager page, objects, check, JSON.
    const count = client.prepare('SELECT count(*) FROM catalog_works');
    const offsetPage = db
      .select()
      .from(catalogWorks)
      .orderBy(asc(catalogWorks.createdAt), asc(catalogWorks.id))
      .limit(200)
      .offset(0)
      .$dynamic();
    const byOffset = (page: number) => offsetPage.offset((page - 1) * 200).all();
    const pager = createWorksPager(sqliteStore(db));
    await pager.page(500, 200); // marks of this version found once
    const pageRows = (await pager.page(1, 200)).rows;
    const page = { total: 100_000, works: pageRows.map(toWork) };
    const pageCheck = TypeCompiler.Compile(t.Object({ total: t.Number(), works: t.Array(WorkSchema) }));
    if (!pageCheck.Check(page)) throw new Error('the page does not satisfy its schema');

    return {
      common: {
        verifyHs256Us: micros(() => verifyHs256(token, secret, systemClock.now()), 5000),
        cachedTokenUs: micros(() => verifier.verify(token), 100_000),
        rateLimitUs: micros(() => limiter.hit('sub:x', 1e12), 100_000),
        dataVersionUs: micros(version, 50_000),
        // The version as the first read-path change read it: one SELECT over the pragma_data_version() table function.
        dataVersionOneSelectUs: micros(() => oneSelect.values(), 50_000),
      },
      workspaces: {
        rows: rows.length,
        queryUs: micros(() => own.all(), 2000),
        viewsUs: micros(() => rows.map((r) => workspaceView(r, 'localhost', 'bench-code-secret')), 5000),
        validateUs: micros(() => listCheck.Check(list), 5000),
        stringifyUs: micros(() => JSON.stringify(list), 5000),
        bytes: listJson.length,
      },
      works: {
        countUs: micros(() => count.values(), 20),
        offsetPage1Us: micros(() => byOffset(1), 500),
        offsetPage500Us: micros(() => byOffset(500), 20),
        pagerPage1Us: await microsAwaited(() => pager.page(1, 200), 500),
        pagerPage500Us: await microsAwaited(() => pager.page(500, 200), 500),
        objectsUs: micros(() => pageRows.map(toWork), 5000),
        validateUs: micros(() => pageCheck.Check(page), 5000),
        stringifyUs: micros(() => JSON.stringify(page), 2000),
      },
    };
  } finally {
    client.close();
  }
}
