// The HTTP layer of one cached read, in-process, without a socket: what Keel's plugin stack costs
// on top of handing Bun a Response, and whether garbage collection shows in the tail. A small app
// built from Keel's real plugins (the envelope error model, workspace auth with its token cache and
// rate limit, the response cache over a real SQLite file) answers a body of the list's size, and
// each way through it is timed call by call:
//  - `Response` only: what the bare server does per request (its headers and body);
//  - an Elysia route returning that constant Response (Elysia's own routing and context);
//  - the cached answer from the route handler (routing, query and header validation, `answer()`);
//  - the cached answer from the auth hook (`early()`, before routing);
//  - the same with If-None-Match (304).
// Per call: p50, p99, p99.9 and max in µs. A collection pause shows as a p99.9/max far above p50,
// and a way that allocates more meets more of them. (heapStats() is too coarse to give bytes per
// call: it counts in blocks, and read 0 for every way here.)
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Elysia, t } from 'elysia';
import { mintToken } from '../src/platform/auth/workspace-token';
import { dbVersion } from '../src/platform/db-version';
import { errorHandling } from '../src/platform/http/errors';
import { createResponseCache } from '../src/platform/http/response-cache';
import { workspaceAuth } from '../src/platform/http/workspace-auth';
import { round } from './lib';
import { envelopeErrorTable } from '../src/platform/platform.errors';

const SECRET = 'bench-http-stages-'.padEnd(48, 'x');
const JSON_TYPE = 'application/json;charset=utf-8';

interface Timing {
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
}

async function timeEach(call: () => Promise<Response> | Response, n: number): Promise<Timing> {
  for (let i = 0; i < 2000; i++) await (await call()).arrayBuffer();
  Bun.gc(true);
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = Bun.nanoseconds();
    const res = await call();
    samples[i] = (Bun.nanoseconds() - t0) / 1000;
    void res;
  }
  samples.sort();
  const at = (p: number) => round(samples[Math.min(n - 1, Math.floor(p * n))]!, 2);
  return { p50Us: at(0.5), p99Us: at(0.99), p999Us: at(0.999), maxUs: round(samples[n - 1]!, 1) };
}

/** `body`: the bytes the read answers (the list of the benchmark). */
export async function httpStages(body: string, n = 100_000) {
  const dir = mkdtempSync(join(tmpdir(), 'keel-http-stages-'));
  const db = new Database(join(dir, 'stages.db'), { create: true });
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (x)');
    const cache = createResponseCache({ version: dbVersion(db), cacheControl: 'private, no-cache', vary: 'Authorization' });
    const parsed = JSON.parse(body) as unknown;
    const constant = () => new Response(body, { headers: { 'content-type': JSON_TYPE } });
    const app = new Elysia()
      .use(errorHandling('envelope', { production: true, errors: envelopeErrorTable }))
      .use(workspaceAuth({ secret: SECRET, authenticatedLimit: 1e12, early: (req, actor, h) => cache.early(req, `sub:${actor.id}`, h) }))
      .get('/api/list', ({ actor, query, request, set }) => cache.answer(request, set, `sub:${actor.id}`, query.status ?? '', () => parsed), {
        query: t.Object({ status: t.Optional(t.String({ maxLength: 20 })) }),
        headers: t.Object({ 'if-none-match': t.Optional(t.String({ maxLength: 4096 })) }),
      })
      .get('/constant', constant);
    const bare = new Elysia().get('/constant', constant);
    const authorization = `Bearer ${mintToken(SECRET, { sub: 'bench', ttlSeconds: 3600 })}`;
    const first = await app.handle(new Request('http://keel.bench/api/list', { headers: { authorization } }));
    const etag = first.headers.get('etag')!;
    // The handler path: the early path only knows the exact target it saw, so a fresh spelling each time goes through routing.
    let k = 0;
    const results = {
      responseOnlyUs: await timeEach(constant, n),
      elysiaConstantRouteUs: await timeEach(() => bare.handle(new Request('http://keel.bench/constant')), n),
      cachedViaHandlerUs: await timeEach(
        () => app.handle(new Request(`http://keel.bench/api/list?x=${k++ % 2 ? 'a' : 'b'}${k}`, { headers: { authorization } })),
        Math.min(n, 20_000),
      ),
      cachedEarlyUs: await timeEach(() => app.handle(new Request('http://keel.bench/api/list', { headers: { authorization } })), n),
      notModifiedEarlyUs: await timeEach(
        () => app.handle(new Request('http://keel.bench/api/list', { headers: { authorization, 'if-none-match': etag } })),
        n,
      ),
      cache: cache.stats(),
    };
    return results;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const body = JSON.stringify({ workspaces: Array.from({ length: 50 }, (_, i) => ({ id: `ws_${i}`, name: `readpath-${i}`, status: 'running', padding: 'x'.repeat(300) })) });
  console.log(JSON.stringify(await httpStages(body), null, 2));
}
