// The read path against a bare server, in one run (issue 13). Keel runs in its own process
// (workspaces and catalog), a bare Bun.serve in another answers the very same bytes, and wrk (one
// thread, Debian's package: installed here when missing) drives each for a fixed time, Keel and the
// bare server alternating so both meet the same machine:
//  1. authenticated GET /api/workspaces of an actor with 50 running `minimal` workspaces, created
//     through the API on the real engine;
//  2. public GET /works?pageSize=200 over 100,000 works (rows bulk-inserted through a second SQLite
//     connection, as a tool would), the first page and pages 1 to 500 at random;
// each at 32 and 128 connections; then the 304 answer of the list, a stage profile of one read
// (bench/readpath-stages.ts) and of its HTTP layer, call by call with the tail (bench/readpath-http-stages.ts). `bun run bench readpath`; BENCH_READPATH_SECONDS (default 5) per run,
// BENCH_READPATH_ROUNDS (default 2) alternations, the best round of each side kept. The works reads
// run again against a Keel whose catalog keeps its state in PostgreSQL (the same 100,000 works), so
// both databases are measured against the same bare server in the same run.
import { Database } from 'bun:sqlite';
import { SQL } from 'bun';
import { freshPostgresDatabase } from '../tests/helpers/platform';
import { join } from 'node:path';
import { startKeelProcess, type KeelProcess } from './keel-process';
import { printTable, round } from './lib';
import { httpStages } from './readpath-http-stages';
import { stageProfile } from './readpath-stages';
import { ensureWrk, wrk, type WrkResult } from './wrk';
import type { WorkspaceList } from '../clients/typescript/src';

const WORKSPACES = 50;
const WORKS = 100_000;
const CONNECTIONS = [32, 128];
const SECONDS = Number(process.env.BENCH_READPATH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_READPATH_ROUNDS ?? 2);
const OWNER = 'bench';

/** A bare Bun.serve in its own process answering `body` as JSON on every request. */
async function startBare(body: string): Promise<{ url: string; stop(): void }> {
  const code = `const body = await Bun.stdin.text();
const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(body, { headers: { 'content-type': 'application/json;charset=utf-8' } }) });
console.log(s.port);`;
  const proc = Bun.spawn([process.execPath, '-e', code], { stdin: new Blob([body]), stdout: 'pipe', stderr: 'inherit' });
  const first = new TextDecoder().decode((await proc.stdout.getReader().read()).value);
  return { url: `http://127.0.0.1:${Number(first.trim())}`, stop: () => proc.kill() };
}

async function createWorkspaces(keel: KeelProcess) {
  await keel.workspace('readpath-0'); // builds the minimal image if the engine lacks it
  for (let i = 1; i < WORKSPACES; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, WORKSPACES - i) }, (_, k) => keel.workspace(`readpath-${i + k}`)));
  }
}

const INSERT_WORK = 'INSERT INTO catalog_works (id, kind, title, original_title, year, match_key, created_at, updated_at) VALUES';

/** The benchmark's works, as rows of INSERT_WORK's columns. */
function workRows(): (string | number)[][] {
  const t0 = Date.now();
  return Array.from({ length: WORKS }, (_, i) => {
    const title = `Bench Work ${i}`;
    return [`wrk_bench${String(i).padStart(7, '0')}`, 'movie', title, title, 1950 + (i % 70), `movie|bench work ${i}|${1950 + (i % 70)}`, t0 + i, t0 + i];
  });
}

function insertWorks(dataDir: string) {
  const db = new Database(join(dataDir, 'keel.db'));
  db.exec('PRAGMA busy_timeout = 5000');
  const insert = db.prepare(`${INSERT_WORK} (?, ?, ?, ?, ?, ?, ?, ?)`);
  db.transaction(() => {
    for (const r of workRows()) insert.run(...(r as [string]));
  })();
  db.close();
}

/** The same works into a PostgreSQL database, 1,000 rows a statement. */
async function insertWorksPostgres(url: string) {
  const sql = new SQL(url, { max: 1 });
  const rows = workRows();
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000);
    const values = chunk.map((_, k) => `(${Array.from({ length: 8 }, (_, c) => `$${k * 8 + c + 1}`).join(', ')})`).join(', ');
    await sql.unsafe(`${INSERT_WORK} ${values}`, chunk.flat());
  }
  await sql.close();
}

interface Pair {
  keel: WrkResult;
  bare: WrkResult;
}

/** Keel and the bare server alternately, ROUNDS times; the best round (requests/s) of each. */
async function compare(keelUrl: string, bareUrl: string, paths: string[], connections: number, headers?: Record<string, string>): Promise<Pair> {
  let best: Partial<Pair> = {};
  for (let r = 0; r < ROUNDS; r++) {
    const bare = await wrk({ url: bareUrl, paths, connections, seconds: SECONDS, headers });
    const keel = await wrk({ url: keelUrl, paths, connections, seconds: SECONDS, headers });
    if (!best.bare || bare.rps > best.bare.rps) best.bare = bare;
    if (!best.keel || keel.rps > best.keel.rps) best.keel = keel;
  }
  return best as Pair;
}

const row = (name: string, p: Pair) => ({
  target: name,
  connections: p.keel.connections,
  keelRps: round(p.keel.rps, 0),
  bareRps: round(p.bare.rps, 0),
  ratio: round(p.keel.rps / p.bare.rps, 2),
  keelP50Ms: round(p.keel.p50Ms),
  keelP99Ms: round(p.keel.p99Ms),
  bareP50Ms: round(p.bare.p50Ms),
  bareP99Ms: round(p.bare.p99Ms),
});

export async function run(): Promise<Record<string, unknown>> {
  ensureWrk();
  const keel = await startKeelProcess({ APP_WORKSPACE_PORT_RANGE: '24000-24999' }, ['workspaces', 'catalog']);
  const stops: (() => void)[] = [];
  try {
    await createWorkspaces(keel);
    insertWorks(keel.dataDir);
    const auth = { authorization: `Bearer ${keel.token(OWNER)}` };
    const listRes = await fetch(keel.url + '/api/workspaces', { headers: auth });
    const listBody = await listRes.text();
    const count = (JSON.parse(listBody) as WorkspaceList).workspaces.length;
    if (count !== WORKSPACES) throw new Error(`expected ${WORKSPACES} workspaces in the list, got ${count}`);
    const catalog = keel.urls.catalog!;
    const pageBody = await (await fetch(catalog + '/works?pageSize=200')).text();
    const total = (JSON.parse(pageBody) as { total: number }).total;
    if (total !== WORKS) throw new Error(`expected ${WORKS} works, got ${total}`);

    const bareList = await startBare(listBody);
    stops.push(bareList.stop);
    const barePage = await startBare(pageBody);
    stops.push(barePage.stop);
    const randomPages = Array.from({ length: 500 }, (_, i) => `/works?pageSize=200&page=${i + 1}`);

    const rows: ReturnType<typeof row>[] = [];
    const figures: Record<string, Pair> = {};
    for (const c of CONNECTIONS) {
      figures[`list@${c}`] = await compare(keel.url, bareList.url, ['/api/workspaces'], c, auth);
      rows.push(row(`GET /api/workspaces (${WORKSPACES}, ${(listBody.length / 1024).toFixed(1)} KiB)`, figures[`list@${c}`]!));
      figures[`works@${c}`] = await compare(catalog, barePage.url, ['/works?pageSize=200'], c);
      rows.push(row(`GET /works?pageSize=200 (${(pageBody.length / 1024).toFixed(1)} KiB)`, figures[`works@${c}`]!));
      figures[`randomPages@${c}`] = await compare(catalog, barePage.url, randomPages, c);
      rows.push(row('GET /works?pageSize=200&page=1..500', figures[`randomPages@${c}`]!));
    }
    const etag = listRes.headers.get('etag');
    if (!etag) throw new Error('the list carries no ETag');
    figures['list304@32'] = await compare(keel.url, bareList.url, ['/api/workspaces'], 32, { ...auth, 'if-none-match': etag });
    rows.push(row('GET /api/workspaces, If-None-Match: 304 (bare: 200 with the body)', figures['list304@32']!));

    // The catalog's reads again, its state in PostgreSQL (a Keel of its own, catalog only).
    const pg = await freshPostgresDatabase();
    const keelPg = await startKeelProcess({ APP_DATABASE_URL: pg.url }, ['catalog']);
    try {
      await fetch(keelPg.urls.catalog + '/works?pageSize=1'); // migrations ran
      await insertWorksPostgres(pg.url);
      const pgPage = await (await fetch(keelPg.urls.catalog + '/works?pageSize=200')).text();
      if ((JSON.parse(pgPage) as { total: number }).total !== WORKS) throw new Error('the PostgreSQL catalog does not hold the works');
      for (const c of CONNECTIONS) {
        figures[`worksPostgres@${c}`] = await compare(keelPg.urls.catalog!, barePage.url, ['/works?pageSize=200'], c);
        rows.push(row('GET /works?pageSize=200, PostgreSQL', figures[`worksPostgres@${c}`]!));
        figures[`randomPagesPostgres@${c}`] = await compare(keelPg.urls.catalog!, barePage.url, randomPages, c);
        rows.push(row('GET /works?pageSize=200&page=1..500, PostgreSQL', figures[`randomPagesPostgres@${c}`]!));
      }
    } finally {
      await keelPg.stop();
      await pg.drop();
    }
    printTable(`read path vs a bare Bun.serve answering the same bytes (wrk -t1, ${SECONDS} s, best of ${ROUNDS})`, rows);

    const stages = await stageProfile(join(keel.dataDir, 'keel.db'), OWNER, keel.secret);
    printTable('one read, stage by stage (µs, in-process)', [
      { stage: 'verify HS256 token / cached token', before: stages.common.verifyHs256Us, after: stages.common.cachedTokenUs },
      { stage: 'rate limit', before: stages.common.rateLimitUs, after: stages.common.rateLimitUs },
      { stage: 'data version (cache check; before: the single SELECT of the first cache)', before: stages.common.dataVersionOneSelectUs, after: stages.common.dataVersionUs },
      { stage: `list: query ${stages.workspaces.rows} rows`, before: stages.workspaces.queryUs, after: 0 },
      { stage: 'list: build views', before: stages.workspaces.viewsUs, after: 0 },
      { stage: 'list: validate response', before: stages.workspaces.validateUs, after: 0 },
      { stage: 'list: JSON.stringify', before: stages.workspaces.stringifyUs, after: 0 },
      { stage: 'works: count(*)', before: stages.works.countUs, after: 0 },
      { stage: 'works: page 1 (OFFSET / mark seek, on a miss)', before: stages.works.offsetPage1Us, after: stages.works.pagerPage1Us },
      { stage: 'works: page 500 (OFFSET / mark seek, on a miss)', before: stages.works.offsetPage500Us, after: stages.works.pagerPage500Us },
      { stage: 'works: build objects', before: stages.works.objectsUs, after: 0 },
      { stage: 'works: validate response', before: stages.works.validateUs, after: 0 },
      { stage: 'works: JSON.stringify', before: stages.works.stringifyUs, after: 0 },
    ]);

    const http = await httpStages(listBody);
    printTable('the HTTP layer of one cached read (µs per call, in-process, no socket)', [
      ['new Response(body) with its headers (the bare server)', http.responseOnlyUs],
      ['Elysia route returning a constant Response', http.elysiaConstantRouteUs],
      ['cached list through routing + validation (answer())', http.cachedViaHandlerUs],
      ['cached list from the auth hook (early())', http.cachedEarlyUs],
      ['304 from the auth hook', http.notModifiedEarlyUs],
    ].map(([way, x]) => ({ way: way as string, ...(x as object) })));

    const summary = (k: string) => ({
      keelRps: round(figures[k]!.keel.rps, 0), bareRps: round(figures[k]!.bare.rps, 0), ratio: round(figures[k]!.keel.rps / figures[k]!.bare.rps, 3),
      keelP50Ms: figures[k]!.keel.p50Ms, keelP99Ms: figures[k]!.keel.p99Ms, bareP50Ms: figures[k]!.bare.p50Ms, bareP99Ms: figures[k]!.bare.p99Ms,
    });
    return {
      workspaces: WORKSPACES, works: WORKS, seconds: SECONDS, rounds: ROUNDS, loadGenerator: 'wrk -t1',
      listBytes: listBody.length, pageBytes: pageBody.length,
      ...Object.fromEntries(Object.keys(figures).map((k) => [k, summary(k)])),
      stages,
      http,
    };
  } finally {
    for (const stop of stops) stop();
    await keel.stop();
  }
}

if (import.meta.main) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
