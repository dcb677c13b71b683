// The serialised-response cache (platform/http/response-cache.ts) and the database version that
// invalidates it (platform/db-version.ts), on a small app built from the real plugins over a real
// SQLite file: scopes never share answers, any write (this connection or another) is seen by the
// next read, ETag/304 follow RFC 9110, the rate limit runs on cached answers, and the cache is bounded.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Elysia, t } from 'elysia';
import { mintToken } from '../../../../src/platform/auth/workspace-token';
import { dbVersion } from '../../../../src/platform/db-version';
import { errorHandling } from '../../../../src/platform/http/errors';
import { createResponseCache, etagMatches } from '../../../../src/platform/http/response-cache';
import { workspaceAuth } from '../../../../src/platform/http/workspace-auth';
import { TEST_SECRET } from '../../../helpers/platform';
import { envelopeErrorTable } from '../../../../src/platform/platform.errors';

const dir = mkdtempSync(join(tmpdir(), 'keel-response-cache-'));
const file = join(dir, 'test.db');
const db = new Database(file, { create: true, strict: true });
db.exec('PRAGMA journal_mode = WAL');
db.exec('CREATE TABLE notes (owner TEXT NOT NULL, text TEXT NOT NULL)');
const other = new Database(file, { strict: true }); // another connection: another process, as far as SQLite knows
afterAll(() => {
  other.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

let builds = 0;
const notes = createResponseCache({ version: dbVersion(db), cacheControl: 'private, no-cache', vary: 'Authorization' });
const listOf = db.prepare<{ text: string }, [string]>('SELECT text FROM notes WHERE owner = ? ORDER BY rowid');
const app = new Elysia()
  .use(errorHandling('envelope', { production: false, errors: envelopeErrorTable }))
  .use(workspaceAuth({ secret: TEST_SECRET, authenticatedLimit: 1000 }))
  .get('/api/notes', ({ actor, request, set }) =>
    notes.answer(request, set, `sub:${actor.id}`, 'all', () => {
      builds++;
      return { notes: listOf.all(actor.id).map((r) => r.text) };
    }),
  );

const get = (as: string, headers: Record<string, string> = {}) =>
  app.handle(new Request('http://keel.test/api/notes', { headers: { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: as, ttlSeconds: 600 })}`, ...headers } }));
const notesOf = async (as: string) => ((await (await get(as)).json()) as { notes: string[] }).notes;

describe('response cache', () => {
  test('a second read is served from the cache, byte for byte, with ETag, Cache-Control, Vary and the rate-limit headers', async () => {
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('alice', 'a1');
    const first = await get('alice');
    const before = builds;
    const second = await get('alice');
    expect(builds).toBe(before);
    expect(await second.text()).toBe(await first.text());
    expect(second.headers.get('content-type')).toBe('application/json;charset=utf-8');
    expect(second.headers.get('etag')).toMatch(/^"[0-9a-z]+"$/);
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(second.headers.get('cache-control')).toBe('private, no-cache');
    expect(second.headers.get('vary')).toBe('Authorization');
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
    expect(second.headers.get('x-ratelimit-reset')).toBeTruthy();
  });

  test('another actor never gets a cached answer: each scope is its own entry', async () => {
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('bob', 'b1');
    expect(await notesOf('alice')).toEqual(['a1']);
    expect(await notesOf('bob')).toEqual(['b1']);
    expect(await notesOf('alice')).toEqual(['a1']);
    expect(await notesOf('carol')).toEqual([]);
  });

  test('a write on this connection is seen by the next read', async () => {
    expect(await notesOf('alice')).toEqual(['a1']);
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('alice', 'a2');
    expect(await notesOf('alice')).toEqual(['a1', 'a2']);
    db.prepare('UPDATE notes SET text = ? WHERE text = ?').run('a2-edited', 'a2');
    expect(await notesOf('alice')).toEqual(['a1', 'a2-edited']);
    db.prepare('DELETE FROM notes WHERE text = ?').run('a2-edited');
    expect(await notesOf('alice')).toEqual(['a1']);
  });

  test('a write committed by another connection is seen by the next read', async () => {
    expect(await notesOf('bob')).toEqual(['b1']);
    other.prepare('INSERT INTO notes VALUES (?, ?)').run('bob', 'b2');
    expect(await notesOf('bob')).toEqual(['b1', 'b2']);
  });

  test('If-None-Match with the current ETag is 304 with no body; after a change the old ETag gets the new answer', async () => {
    const res = await get('alice');
    const etag = res.headers.get('etag')!;
    const notModified = await get('alice', { 'if-none-match': etag });
    expect(notModified.status).toBe(304);
    expect(await notModified.text()).toBe('');
    expect(notModified.headers.get('etag')).toBe(etag);
    expect(notModified.headers.get('x-ratelimit-limit')).toBe('1000');
    expect((await get('alice', { 'if-none-match': `"other", W/${etag}` })).status).toBe(304);
    expect((await get('alice', { 'if-none-match': '*' })).status).toBe(304);
    expect((await get('alice', { 'if-none-match': '"stale"' })).status).toBe(200);
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('alice', 'a3');
    const changed = await get('alice', { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(((await changed.json()) as { notes: string[] }).notes).toEqual(['a1', 'a3']);
  });

  test('a body equal to an earlier one has the same ETag (a strong tag names the bytes)', async () => {
    const before = (await get('alice')).headers.get('etag');
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('alice', 'tmp');
    expect((await get('alice')).headers.get('etag')).not.toBe(before);
    db.prepare('DELETE FROM notes WHERE text = ?').run('tmp');
    expect((await get('alice')).headers.get('etag')).toBe(before);
  });

  test('bounded by entries and by size: the least recently served goes first', async () => {
    const small = createResponseCache({ version: () => 'v', cacheControl: 'no-cache', maxEntries: 2, maxChars: 1000 });
    const req = new Request('http://keel.test/');
    let n = 0;
    const build = (v: unknown) => () => (n++, v);
    small.answer(req, { headers: {} }, 's', 'a', build(1));
    small.answer(req, { headers: {} }, 's', 'b', build(2));
    small.answer(req, { headers: {} }, 's', 'a', build(1)); // a is now the most recent
    small.answer(req, { headers: {} }, 's', 'c', build(3)); // b goes
    expect(small.stats().entries).toBe(2);
    n = 0;
    small.answer(req, { headers: {} }, 's', 'a', build(1));
    expect(n).toBe(0);
    small.answer(req, { headers: {} }, 's', 'b', build(2));
    expect(n).toBe(1);
    small.answer(req, { headers: {} }, 's', 'big', build('x'.repeat(600)));
    small.answer(req, { headers: {} }, 's', 'big2', build('y'.repeat(600)));
    expect(small.stats().chars).toBeLessThanOrEqual(1000);
    const huge = await (await small.answer(req, { headers: {} }, 's', 'huge', build('z'.repeat(5000)))).text();
    expect(huge.length).toBe(5002); // answered, not kept
    expect(small.stats().chars).toBeLessThanOrEqual(1000);
  });
});

// The early path: the auth hook answers a target that `answer()` validated before, before routing.
// A clock the tests move, so a token can expire while its verdict and the answer are both cached.
let nowMs = Date.parse('2026-11-23T07:00:00Z');
const clock = { now: () => nowMs };
let earlyBuilds = 0;
const items = createResponseCache({ version: dbVersion(db), cacheControl: 'private, no-cache', vary: 'Authorization' });
const EARLY_LIMIT = 50;
const earlyApp = new Elysia()
  .use(errorHandling('envelope', { production: false, errors: envelopeErrorTable }))
  .use(
    workspaceAuth({
      secret: TEST_SECRET,
      clock,
      authenticatedLimit: EARLY_LIMIT,
      early: (request, actor, headers) => items.early(request, `sub:${actor.id}`, headers),
    }),
  )
  .get(
    '/api/items',
    ({ actor, query, request, set }) =>
      items.answer(request, set, `sub:${actor.id}`, String(query.n ?? 0), () => {
        earlyBuilds++;
        return { owner: actor.id, n: query.n ?? 0, notes: listOf.all(actor.id).map((r) => r.text) };
      }),
    {
      query: t.Object({ n: t.Optional(t.Integer({ minimum: 0, maximum: 9 })) }, { additionalProperties: false }),
      headers: t.Object({ 'if-none-match': t.Optional(t.String({ maxLength: 4096 })) }),
    },
  )
  .post('/api/items', ({ actor }) => ({ posted: actor.id }));

const tokens = new Map<string, string>();
const tokenOf = (as: string) => {
  if (!tokens.has(as)) tokens.set(as, mintToken(TEST_SECRET, { sub: as, ttlSeconds: 600, clock }));
  return tokens.get(as)!;
};
const item = (as: string, target: string, headers: Record<string, string> = {}, method = 'GET') =>
  earlyApp.handle(new Request(`http://keel.test${target}`, { method, headers: { authorization: `Bearer ${tokenOf(as)}`, ...headers } }));

describe('early answers (before routing and validation)', () => {
  test('a target answered once is answered early the next time: same bytes, same headers, one build', async () => {
    const first = await item('ann', '/api/items?n=1');
    expect(first.status).toBe(200);
    const { earlyHits } = items.stats();
    const builds = earlyBuilds;
    const second = await item('ann', '/api/items?n=1');
    expect(items.stats().earlyHits).toBe(earlyHits + 1);
    expect(earlyBuilds).toBe(builds);
    expect(await second.text()).toBe(await first.text());
    const names = (r: Response) => [...r.headers.keys()].sort();
    expect(names(second)).toEqual(names(first));
    for (const h of ['content-type', 'etag', 'cache-control', 'vary', 'x-ratelimit-limit', 'x-ratelimit-reset']) {
      expect(second.headers.get(h)).toBe(first.headers.get(h));
    }
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
  });

  test("another actor asking for the same target never gets the first actor's answer", async () => {
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('ann', 'ann-1');
    expect(((await (await item('ann', '/api/items?n=2')).json()) as any).notes).toEqual(['ann-1']);
    expect(((await (await item('ann', '/api/items?n=2')).json()) as any).notes).toEqual(['ann-1']);
    const before = items.stats().earlyHits;
    const ben = (await (await item('ben', '/api/items?n=2')).json()) as any;
    expect(ben).toEqual({ owner: 'ben', n: 2, notes: [] });
    expect(items.stats().earlyHits).toBe(before); // ben's first read of it was built for ben
    expect(((await (await item('ben', '/api/items?n=2')).json()) as any).owner).toBe('ben');
    expect(items.stats().earlyHits).toBe(before + 1);
  });

  test('a write is seen by the next early read', async () => {
    await item('ann', '/api/items?n=3');
    await item('ann', '/api/items?n=3');
    db.prepare('INSERT INTO notes VALUES (?, ?)').run('ann', 'ann-2');
    expect(((await (await item('ann', '/api/items?n=3')).json()) as any).notes).toEqual(['ann-1', 'ann-2']);
    other.prepare('INSERT INTO notes VALUES (?, ?)').run('ann', 'ann-3');
    expect(((await (await item('ann', '/api/items?n=3')).json()) as any).notes).toEqual(['ann-1', 'ann-2', 'ann-3']);
  });

  test('another spelling of a known query is answered rightly the normal way; an invalid query still gets its 400', async () => {
    const right = await (await item('ann', '/api/items?n=4')).text();
    await item('ann', '/api/items?n=4');
    // Spellings Elysia validates to n=4 (a leading zero, an extra parameter it strips): each is built
    // the normal way the first time (no early answer), then served early, and always the n=4 answer.
    for (const other of ['/api/items?n=04', '/api/items?n=4&extra=1', '/api/items?n=4.0']) {
      const before = items.stats().earlyHits;
      expect(await (await item('ann', other)).text()).toBe(right);
      expect(items.stats().earlyHits).toBe(before);
      expect(await (await item('ann', other)).text()).toBe(right);
      expect(items.stats().earlyHits).toBe(before + 1);
    }
    expect(((await (await item('ann', '/api/items?n=4&n=5')).json()) as any).n).toBe(5); // Elysia keeps the last: the n=5 answer, built for it
    const before = items.stats().earlyHits;
    for (const bad of ['/api/items?n=44', '/api/items?n=x', '/api/items?n=4%00', '/api/items?n=-1']) {
      for (let i = 0; i < 2; i++) {
        const res = await item('ann', bad);
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error.code).toBeString();
      }
    }
    expect(items.stats().earlyHits).toBe(before);
  });

  test('If-None-Match is answered early with 304; one longer than the schema allows still meets its validation', async () => {
    const etag = (await item('ann', '/api/items?n=5')).headers.get('etag')!;
    const before = items.stats().earlyHits;
    const res = await item('ann', '/api/items?n=5', { 'if-none-match': etag });
    expect(res.status).toBe(304);
    expect(await res.text()).toBe('');
    expect(res.headers.get('etag')).toBe(etag);
    expect(res.headers.get('content-type')).toBeNull();
    expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    expect(items.stats().earlyHits).toBe(before + 1);
    const long = await item('ann', '/api/items?n=5', { 'if-none-match': `${etag}, "${'x'.repeat(4100)}"` });
    expect(long.status).toBe(400);
    expect(items.stats().earlyHits).toBe(before + 1);
  });

  test('only GET: another method on a cached target takes its own route', async () => {
    await item('ann', '/api/items?n=6');
    const res = await item('ann', '/api/items?n=6', {}, 'POST');
    expect(await res.json()).toEqual({ posted: 'ann' });
  });

  test('rate limit on every early answer: headers count down, then 429 with Retry-After, 200 or 304', async () => {
    const first = await item('cid', '/api/items?n=7');
    const etag = first.headers.get('etag')!;
    let remaining = Number(first.headers.get('x-ratelimit-remaining'));
    const before = items.stats().earlyHits;
    while (remaining > 0) {
      const res = await item('cid', '/api/items?n=7', remaining % 2 ? { 'if-none-match': etag } : {});
      expect(res.status).toBe(remaining % 2 ? 304 : 200);
      expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(--remaining);
    }
    expect(items.stats().earlyHits).toBe(before + EARLY_LIMIT - 1);
    for (const headers of [{}, { 'if-none-match': etag }] as Record<string, string>[]) {
      const res = await item('cid', '/api/items?n=7', headers);
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(((await res.json()) as any).error.code).toBe('RATE_LIMITED');
    }
  });

  test('a token that expires is refused although its verdict and the answer are both cached', async () => {
    await item('dee', '/api/items?n=8');
    expect((await item('dee', '/api/items?n=8')).status).toBe(200);
    nowMs += 700_000; // past exp (600 s) and the 60 s leeway
    const res = await item('dee', '/api/items?n=8');
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe('UNAUTHORIZED');
    const noToken = await earlyApp.handle(new Request('http://keel.test/api/items?n=8'));
    expect(noToken.status).toBe(401);
  });

  test('the targets it remembers are bounded, in number and in length', async () => {
    const small = createResponseCache({ version: () => 'v', cacheControl: 'no-cache', maxEntries: 2 });
    for (let i = 0; i < 50; i++) small.answer(new Request(`http://keel.test/x?i=${i}`), { headers: {} }, 's', 'same', () => 1);
    expect(small.stats().targets).toBeLessThanOrEqual(8);
    expect(small.early(new Request('http://keel.test/x?i=49'), 's', [])).toBeInstanceOf(Response);
    expect(small.early(new Request('http://keel.test/x?i=0'), 's', [])).toBeUndefined();
    expect(small.early(new Request('http://keel.test/x?i=49'), 'other', [])).toBeUndefined();
    // A long target (a query padded with what the schema strips) is answered, never remembered.
    const long = `http://keel.test/x?pad=${'p'.repeat(600)}`;
    expect(await (await small.answer(new Request(long), { headers: {} }, 's', 'same', () => 1)).text()).toBe('1');
    expect(small.early(new Request(long), 's', [])).toBeUndefined();
  });
});

describe('etagMatches', () => {
  test('RFC 9110 weak comparison over a list, and *', () => {
    expect(etagMatches(null, '"a"')).toBe(false);
    expect(etagMatches('"a"', '"a"')).toBe(true);
    expect(etagMatches('W/"a"', '"a"')).toBe(true);
    expect(etagMatches(' "x" ,"a" ', '"a"')).toBe(true);
    expect(etagMatches('*', '"a"')).toBe(true);
    expect(etagMatches('a', '"a"')).toBe(false);
    expect(etagMatches('"ab"', '"a"')).toBe(false);
    expect(etagMatches('', '"a"')).toBe(false);
  });
});
