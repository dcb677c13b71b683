// The files of a workspace through HTTP (CONTRACT.md, "The workspace as an agent's computer"): bytes
// with Range, directory listings, streamed uploads with parents made, delete and move; paths resolved
// in the container (a symlink to /etc/hostname reads the container's file); uploads past
// APP_FILE_MAX_BYTES refused with 413 and no partial file; another actor's workspace is 404; a
// stopped one 409.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { hostname } from 'node:os';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { closeAndClean, createRunning, errorCode, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

const MAX = 256 * 1024;
let p: TestPlatform | undefined;
let ws = '';

const filesUrl = (path: string, id = ws) => `/api/workspaces/${id}/files?path=${encodeURIComponent(path)}`;
const put = (path: string, body: BodyInit, init: RequestInit & { as?: string } = {}) => p!.api('workspaces', filesUrl(path), { method: 'PUT', body, ...init });
const get = (path: string, init: RequestInit & { as?: string } = {}) => p!.api('workspaces', filesUrl(path), init);

/** Runs a command in the workspace as alice and answers its stdout. */
async function sh(command: string): Promise<string> {
  const res = await p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', json: { command } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { stdout: string }).stdout;
}

/** A body of `size` bytes produced as it is sent (chunked: no Content-Length). */
function chunked(size: number, byte = 0x61): ReadableStream<Uint8Array> {
  let left = size;
  return new ReadableStream({
    pull(c) {
      if (left <= 0) return c.close();
      const n = Math.min(left, 64 * 1024);
      left -= n;
      c.enqueue(new Uint8Array(n).fill(byte));
    },
  });
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_FILE_MAX_BYTES: String(MAX) } });
  ws = (await createRunning(p!, 'files', { timeoutMs: 90_000 })).id;
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

describe('reading and writing', () => {
  test('a file written with PUT reads back byte for byte, its parents made', async () => {
    const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) % 256);
    const res = await put('deep/er/data.bin', bytes);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ path: '/workspace/deep/er/data.bin', size: bytes.byteLength });
    const back = await get('/workspace/deep/er/data.bin');
    expect(back.status).toBe(200);
    expect(back.headers.get('content-type')).toBe('application/octet-stream');
    expect(new Uint8Array(await back.arrayBuffer())).toEqual(bytes);
    // The file belongs to the template's user, as if the workspace had written it itself.
    expect((await sh('stat -c %u /workspace/deep/er/data.bin')).trim()).toBe('1000');
  });

  test('a chunked upload (no Content-Length) is written whole and replaces the old content', async () => {
    await put('replace.txt', 'old content that is longer');
    const res = await put('replace.txt', chunked(200_000, 0x62));
    expect(res.status).toBe(200);
    expect((await res.json()).size).toBe(200_000);
    expect((await sh('wc -c < /workspace/replace.txt; head -c 3 /workspace/replace.txt')).replace(/\s+/g, ' ').trim()).toBe('200000 bbb');
  });

  test('an empty body makes an empty file', async () => {
    const res = await put('empty', '');
    expect(await res.json()).toEqual({ path: '/workspace/empty', size: 0 });
    const back = await get('empty');
    expect(back.status).toBe(200);
    expect((await back.arrayBuffer()).byteLength).toBe(0);
  });

  test('Range answers 206 with the asked bytes; a range past the end answers 416', async () => {
    await put('range.txt', '0123456789');
    const mid = await get('range.txt', { headers: { range: 'bytes=2-5' } });
    expect(mid.status).toBe(206);
    expect(mid.headers.get('content-range')).toBe('bytes 2-5/10');
    expect(await mid.text()).toBe('2345');
    const tail = await get('range.txt', { headers: { range: 'bytes=-3' } });
    expect(await tail.text()).toBe('789');
    const open = await get('range.txt', { headers: { range: 'bytes=7-' } });
    expect(await open.text()).toBe('789');
    const past = await get('range.txt', { headers: { range: 'bytes=10-20' } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */10');
    expect(await errorCode(past)).toBe('RANGE_NOT_SATISFIABLE');
  });

  test('a directory answers its entries with type, size, mode and modification time', async () => {
    await put('listing/a.txt', 'aaa');
    await put('listing/sub/b.txt', 'b');
    await sh('cd /workspace/listing && ln -s a.txt link && chmod 600 a.txt && touch .hidden');
    const res = await get('listing');
    expect(res.status).toBe(200);
    const { entries } = (await res.json()) as { entries: any[] };
    expect(entries.map((e) => [e.name, e.type])).toEqual([
      ['.hidden', 'file'],
      ['a.txt', 'file'],
      ['link', 'symlink'],
      ['sub', 'directory'],
    ]);
    const a = entries.find((e) => e.name === 'a.txt');
    expect(a).toMatchObject({ size: 3, mode: '0600' });
    expect(Math.abs(Date.parse(a.modifiedAt) - Date.now())).toBeLessThan(10 * 60_000);
  });

  test('a missing path answers 404 FILE_NOT_FOUND', async () => {
    const res = await get('/no/such/file');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('FILE_NOT_FOUND');
  });
});

describe('confinement', () => {
  test("a symlink to /etc/hostname reads the container's file, never the host's", async () => {
    await sh('ln -sf /etc/hostname /workspace/hn');
    const res = await get('hn');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toBe(await sh('cat /etc/hostname'));
    expect(text.trim()).not.toBe(hostname());
  });

  test('a path climbing out with .. stays in the container', async () => {
    const res = await get('../../../../etc/os-release');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Keel minimal');
  });

  test("a write where the template's user may not write answers 403 PERMISSION_DENIED and leaves nothing", async () => {
    const res = await put('/etc/keel-probe', 'x');
    expect(res.status).toBe(403);
    expect(await errorCode(res)).toBe('PERMISSION_DENIED');
    expect(await sh('ls /etc/keel-probe /etc/.keel-upload-* 2>&1 || true')).toContain('No such file');
  });
});

describe('size limit', () => {
  test('a declared body past APP_FILE_MAX_BYTES answers 413 FILE_TOO_LARGE in the envelope and writes nothing', async () => {
    const res = await put('big/declared.bin', new Uint8Array(MAX + 1));
    expect(res.status).toBe(413);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: 'FILE_TOO_LARGE', details: { limit: MAX } });
    expect(await sh('ls -a /workspace/big 2>&1 || true')).not.toContain('declared.bin');
  });

  test('a chunked body that grows past the limit answers 413 and leaves no partial file, nor the old one touched', async () => {
    await put('limit/keep.txt', 'original');
    const res = await put('limit/keep.txt', chunked(MAX * 3));
    expect(res.status).toBe(413);
    expect(await errorCode(res)).toBe('FILE_TOO_LARGE');
    expect(await sh('cat /workspace/limit/keep.txt; ls -a /workspace/limit')).toBe('original.\n..\nkeep.txt\n');
  });

  test('a body over the JSON limit (4 MiB) still reaches the upload route and is refused by its own limit', async () => {
    const res = await put('limit/huge.bin', new Uint8Array(5 * 1024 * 1024));
    expect(res.status).toBe(413);
    expect(await errorCode(res)).toBe('FILE_TOO_LARGE');
  });

  test('JSON routes keep their 4 MiB limit, declared or chunked, with 413 in the envelope', async () => {
    const json = `{"command":"${'x'.repeat(5 * 1024 * 1024)}"}`;
    const declared = await p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: json });
    expect(declared.status).toBe(413);
    expect(await errorCode(declared)).toBe('PAYLOAD_TOO_LARGE');
    const bytes = new TextEncoder().encode(json);
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < bytes.byteLength; i += 65536) c.enqueue(bytes.subarray(i, i + 65536));
        c.close();
      },
    });
    const chunkedJson = await p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream });
    expect(chunkedJson.status).toBe(413);
    expect(await errorCode(chunkedJson)).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('delete and move', () => {
  test('delete removes a file; a non-empty directory needs recursive=true', async () => {
    await put('del/one.txt', '1');
    await put('del/sub/two.txt', '2');
    const file = await p!.api('workspaces', filesUrl('del/one.txt'), { method: 'DELETE' });
    expect(await file.json()).toEqual({ path: '/workspace/del/one.txt', deleted: true });
    const refused = await p!.api('workspaces', filesUrl('del'), { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(await errorCode(refused)).toBe('FILE_CONFLICT');
    const all = await p!.api('workspaces', `${filesUrl('del')}&recursive=true`, { method: 'DELETE' });
    expect(await all.json()).toEqual({ path: '/workspace/del', deleted: true });
    expect((await get('del')).status).toBe(404);
    const again = await p!.api('workspaces', filesUrl('del'), { method: 'DELETE' });
    expect(await errorCode(again)).toBe('FILE_NOT_FOUND');
  });

  test('deleting a symlink removes the link, never its target', async () => {
    await put('target.txt', 'kept');
    await sh('ln -sf /workspace/target.txt /workspace/to-target');
    await p!.api('workspaces', `${filesUrl('to-target')}&recursive=true`, { method: 'DELETE' });
    expect(await (await get('target.txt')).text()).toBe('kept');
  });

  test('move renames into new parents; a missing source answers 404', async () => {
    await put('mv/src.txt', 'moving');
    const res = await p!.api('workspaces', `/api/workspaces/${ws}/files/move`, { method: 'POST', json: { from: 'mv/src.txt', to: '/workspace/mv/new/dst.txt' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ from: '/workspace/mv/src.txt', to: '/workspace/mv/new/dst.txt' });
    expect(await (await get('mv/new/dst.txt')).text()).toBe('moving');
    expect((await get('mv/src.txt')).status).toBe(404);
    const missing = await p!.api('workspaces', `/api/workspaces/${ws}/files/move`, { method: 'POST', json: { from: 'mv/nothing', to: 'mv/x' } });
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe('FILE_NOT_FOUND');
  });

  test('a bad body or query is a 400 that does not echo it', async () => {
    const res = await p!.api('workspaces', `/api/workspaces/${ws}/files/move`, { method: 'POST', json: { from: 'a\u0000secret-value' } });
    expect(res.status).toBe(400);
    expect(await res.text()).not.toContain('secret-value');
    const noPath = await p!.api('workspaces', `/api/workspaces/${ws}/files`);
    expect(noPath.status).toBe(400);
  });
});

describe('ownership and state', () => {
  test("another actor's workspace answers 404 WORKSPACE_NOT_FOUND for every files route", async () => {
    await put('mine.txt', 'alice only');
    const reads = await get('mine.txt', { as: 'bob' });
    expect(reads.status).toBe(404);
    expect(await errorCode(reads)).toBe('WORKSPACE_NOT_FOUND');
    expect((await put('mine.txt', 'bob was here', { as: 'bob' })).status).toBe(404);
    expect((await p!.api('workspaces', filesUrl('mine.txt'), { method: 'DELETE', as: 'bob' })).status).toBe(404);
    expect((await p!.api('workspaces', `/api/workspaces/${ws}/files/move`, { method: 'POST', json: { from: 'mine.txt', to: 'b' }, as: 'bob' })).status).toBe(404);
    expect(await (await get('mine.txt')).text()).toBe('alice only');
  });

  test('a stopped workspace answers 409 WORKSPACE_NOT_RUNNING', async () => {
    const other = (await createRunning(p!, 'files-stopped', { timeoutMs: 90_000 })).id;
    expect((await p!.api('workspaces', `/api/workspaces/${other}/stop`, { method: 'POST' })).status).toBeLessThan(300);
    await waitStatus(p!, other, 'stopped', { timeoutMs: 60_000 });
    const res = await p!.api('workspaces', filesUrl('x', other));
    expect(res.status).toBe(409);
    expect(await errorCode(res)).toBe('WORKSPACE_NOT_RUNNING');
    const w = await p!.api('workspaces', filesUrl('x', other), { method: 'PUT', body: 'x' });
    expect(await errorCode(w)).toBe('WORKSPACE_NOT_RUNNING');
  }, 120_000);
});
