// The library crawl on 100,000 files (1,000 folders of 100): the crawl alone (readdir with file
// types, a stat per media file, batches) against a bare recursive readdir+stat as the baseline, and
// an unchanged rescan end to end (POST /library/scans -> workers job -> catalog compare -> done)
// of a library whose 100,000 files the catalog already knows, on the in-process bus and on NATS, with
// the catalog's state in SQLite and in PostgreSQL (the test run's private cluster).
// Aims (issue 12): crawl over 5,000 files/s (Immich imports ~3,000/s); unchanged rescan under 5 s.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform } from '../src/main';
import { openDb } from '../src/platform/db';
import { openPostgresStore, sqliteStore, type Store } from '../src/platform/store';
import { catalogTables } from '../src/services/catalog/catalog.tables';
import { libraryTables } from '../src/services/catalog/library/library.tables';
import { freshPostgresDatabase } from '../tests/helpers/platform';
import { crawl } from '../src/services/workers/crawl';
import { catalogToken } from '../tests/helpers/media';
import { scanLibrary } from '../tests/helpers/library';
import { startTestNats } from '../tests/helpers/nats';
import { mintToken } from '../src/platform/auth/workspace-token';
import { printTable, round } from './lib';

const SECRET = 'd'.repeat(64);

function makeLibrary(files: number): string {
  const root = mkdtempSync(join(tmpdir(), 'keel-bench-library-'));
  const perDir = 100;
  for (let d = 0; d < Math.ceil(files / perDir); d++) {
    const dir = join(root, `Show ${d}`, 'Season 1');
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < perDir && d * perDir + f < files; f++) writeFileSync(join(dir, `Episode ${f}.mkv`), 'x');
  }
  return root;
}

/** The baseline: the least a walk can do (recursive readdir with types, one stat per file). */
function bareWalk(dir: string): number {
  let n = 0;
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) n += bareWalk(p);
    else if (d.isFile()) {
      statSync(p);
      n++;
    }
  }
  return n;
}

/** What a first scan would have left: an asset and a library row per file (not probed: seeded), in either database. */
async function seedCatalog(store: Store, root: string) {
  const { catalogEditions, catalogAssets } = catalogTables(store.dialect);
  const { libraryFiles } = libraryTables(store.dialect);
  const now = Date.now();
  const assets: (typeof catalogAssets.$inferInsert)[] = [];
  const rows: (typeof libraryFiles.$inferInsert)[] = [];
  const walk = (rel: string) => {
    for (const d of readdirSync(join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(r);
      else {
        const s = statSync(join(root, r));
        const id = `ast_bench${assets.length}`;
        assets.push({ id, editionId: 'edn_bench', root: 0, path: r, container: 'mkv', fastHash: '0000000000000000', sizeBytes: s.size, identification: 'unidentified', kind: 'logical-composition', layout: 'file', createdAt: now, updatedAt: now });
        rows.push({ root: 0, path: r, assetId: id, sizeBytes: s.size, mtimeMs: Math.trunc(s.mtimeMs), available: true, seenScan: null, outcome: 'added', checkedAt: now });
      }
    }
  };
  walk('');
  await store.transaction(async (tx) => {
    await tx.insert(catalogEditions).values({ id: 'edn_bench', workId: null, kind: 'unidentified', createdAt: now, updatedAt: now });
    for (let i = 0; i < assets.length; i += 1000) {
      await tx.insert(catalogAssets).values(assets.slice(i, i + 1000));
      await tx.insert(libraryFiles).values(rows.slice(i, i + 1000));
    }
  });
  await store.close();
}

async function rescan(bus: string, root: string, files: number, database: 'sqlite' | 'postgres' = 'sqlite') {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-library-data-'));
  const pg = database === 'postgres' ? await freshPostgresDatabase() : undefined;
  if (pg) await seedCatalog(await openPostgresStore(pg.url), root);
  else await seedCatalog(sqliteStore(openDb(dataDir)), root);
  const p = await startPlatform({
    ...process.env, NODE_ENV: 'test', APP_QUIET_TOKEN: '1', APP_DATA_DIR: dataDir, APP_API_SECRET: SECRET, APP_BUS: bus, APP_MEDIA_ROOTS: root,
    APP_SERVICES: 'identity,catalog,workers', APP_IDENTITY_PORT: '0', APP_CATALOG_PORT: '0', APP_WORKERS_PORT: '0', APP_WORKERS_POLL_MS: '50',
    ...(pg && { APP_DATABASE_URL: pg.url }),
  });
  try {
    const identity = {
      api: (_s: 'identity', path: string, init: RequestInit & { as?: string | null; json?: unknown } = {}) =>
        fetch(p.urls.identity + path, {
          method: init.method,
          headers: { 'content-type': 'application/json', ...(init.as === 'admin' ? { authorization: `Bearer ${mintToken(SECRET, { sub: 'admin', role: 'admin', ttlSeconds: 600 })}` } : {}) },
          body: JSON.stringify(init.json),
        }),
    };
    const token = await catalogToken(identity, 'bench');
    const t0 = performance.now();
    const scan = await scanLibrary(p.urls.catalog!, token);
    const seconds = (performance.now() - t0) / 1000;
    if (scan.status !== 'done' || scan.counts.unchanged !== files) throw new Error(`unexpected rescan: ${JSON.stringify(scan)}`);
    return { seconds: round(seconds, 2), filesPerSec: Math.round(files / seconds) };
  } finally {
    await p.stop();
    await pg?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const files = Number(process.env.BENCH_LIBRARY_FILES ?? 100_000);
  const root = makeLibrary(files);
  const nats = await startTestNats();
  try {
    bareWalk(root); // warm the dentry cache for both walks alike
    let t0 = performance.now();
    const bare = bareWalk(root);
    const bareS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    let crawled = 0;
    for await (const batch of crawl(root, '', { batchSize: 500, onSkip: () => {} })) crawled += batch.length;
    const crawlS = (performance.now() - t0) / 1000;
    if (bare !== files || crawled !== files) throw new Error(`walked ${bare} / crawled ${crawled} of ${files}`);

    const results = {
      files,
      bareWalk: { seconds: round(bareS, 2), filesPerSec: Math.round(files / bareS) },
      crawl: { seconds: round(crawlS, 2), filesPerSec: Math.round(files / crawlS) },
      unchangedRescanMemory: await rescan('memory', root, files),
      unchangedRescanNats: await rescan(nats.url, root, files),
      unchangedRescanPostgres: await rescan('memory', root, files, 'postgres'),
      ratios: {} as Record<string, number>,
    };
    results.ratios = {
      crawlVsBareWalk: round(results.crawl.seconds / results.bareWalk.seconds, 2),
      rescanMemoryVsCrawl: round(results.unchangedRescanMemory.seconds / results.crawl.seconds, 2),
      rescanNatsVsMemory: round(results.unchangedRescanNats.seconds / results.unchangedRescanMemory.seconds, 2),
      rescanPostgresVsSqlite: round(results.unchangedRescanPostgres.seconds / results.unchangedRescanMemory.seconds, 2),
      crawlVsImmich3000: round(results.crawl.filesPerSec / 3000, 1),
    };
    printTable(`Library crawl and unchanged rescan, ${files} files`, [
      { what: 'bare readdir+stat (baseline)', ...results.bareWalk },
      { what: 'crawl (no probe)', ...results.crawl },
      { what: 'unchanged rescan, memory bus', ...results.unchangedRescanMemory },
      { what: 'unchanged rescan, NATS', ...results.unchangedRescanNats },
      { what: 'unchanged rescan, memory bus, PostgreSQL', ...results.unchangedRescanPostgres },
    ]);
    console.log(results.ratios);
    return results;
  } finally {
    await nats.close();
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  console.log(JSON.stringify(await run(), null, 2));
  process.exit(0);
}
