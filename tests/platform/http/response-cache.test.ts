// The serialised-response cache (platform/http/response-cache.ts) and the database version that
// invalidates it (platform/db-version.ts), on a small app built from the real plugins over a real
// SQLite file: scopes never share answers, any write (this connection or another) is seen by the
// next read, ETag/304 follow RFC 9110, the rate limit runs on cached answers, and the cache is bounded.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Elysia } from 'elysia';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { dbVersion } from '../../../src/platform/db-version';
import { errorHandling } from '../../../src/platform/http/errors';
import { createResponseCache, etagMatches } from '../../../src/platform/http/response-cache';
import { workspaceAuth } from '../../../src/platform/http/workspace-auth';
import { TEST_SECRET } from '../../helpers/platform';

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
  .use(errorHandling('envelope', { production: false }))
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
    const huge = await small.answer(req, { headers: {} }, 's', 'huge', build('z'.repeat(5000))).text();
    expect(huge.length).toBe(5002); // answered, not kept
    expect(small.stats().chars).toBeLessThanOrEqual(1000);
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
