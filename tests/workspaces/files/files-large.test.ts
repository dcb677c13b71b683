// A 500 MB file up and down through a Keel running as its own process, its RSS sampled all along
// (CONTRACT.md: "moving a 500 MB file adds under 32 MB to Keel's memory"). The client streams too,
// so what is measured is Keel's own holding of the bytes.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, TEST_SECRET } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');

const SIZE = 500 * 1024 * 1024;
const MB = 1024 * 1024;
let keel: KeelProcess | undefined;
let dataDir = '';
let ws = '';
const token = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 3600 });
const api = (path: string, init: RequestInit = {}) =>
  fetch(keel!.urls.workspaces + path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } });

/** Keel's resident memory now, from the kernel. */
function rss(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${keel!.proc.pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** Samples RSS every 50 ms until stopped; the highest value seen. */
function sampler() {
  let peak = rss();
  const timer = setInterval(() => (peak = Math.max(peak, rss())), 50);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rss());
  };
}

/** `size` bytes of a repeating pattern, made as they are sent. */
function generated(size: number): ReadableStream<Uint8Array> {
  const block = new Uint8Array(256 * 1024).map((_, i) => (i * 31) % 251);
  let left = size;
  return new ReadableStream({
    pull(c) {
      if (left <= 0) return c.close();
      const n = Math.min(left, block.byteLength);
      left -= n;
      c.enqueue(n === block.byteLength ? block.slice() : block.slice(0, n));
    },
  });
}

const expectedHash = (() => {
  const h = new Bun.CryptoHasher('sha256');
  const block = new Uint8Array(256 * 1024).map((_, i) => (i * 31) % 251);
  for (let left = SIZE; left > 0; left -= block.byteLength) h.update(left >= block.byteLength ? block : block.subarray(0, left));
  return h.digest('hex');
})();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'keel-files-large-'));
  const lo = 28000 + Math.floor(Math.random() * 100) * 90;
  keel = await startKeel([BUN, 'src/main.ts'], { APP_DATA_DIR: dataDir, APP_WORKSPACE_PORT_RANGE: `${lo}-${lo + 89}` }, ['workspaces']);
  const res = await api('/api/workspaces', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'large', template: 'minimal' }) });
  expect(res.status).toBe(201);
  ws = ((await res.json()) as { id: string }).id;
  await waitFor('the workspace to run', async () => ((await (await api(`/api/workspaces/${ws}`)).json()) as { status: string }).status === 'running', 90_000);
}, 150_000);

afterAll(async () => {
  const instance = keelInstance(dataDir);
  await keel?.stop();
  await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

test('a 500 MB upload and download add under 32 MB to Keel’s memory and arrive whole', async () => {
  // Warm up the paths once, so the baseline holds the code and buffers any transfer needs.
  expect((await api(`/api/workspaces/${ws}/files?path=warm.bin`, { method: 'PUT', body: generated(8 * MB) })).status).toBe(200);
  await (await api(`/api/workspaces/${ws}/files?path=warm.bin`)).arrayBuffer();
  Bun.gc(true);
  await Bun.sleep(500);
  const baseline = rss();

  const stopUp = sampler();
  const up = await api(`/api/workspaces/${ws}/files?path=big/file.bin`, { method: 'PUT', body: generated(SIZE) });
  const upPeak = stopUp();
  expect(up.status).toBe(200);
  expect(await up.json()).toEqual({ path: '/workspace/big/file.bin', size: SIZE });

  const stopDown = sampler();
  const down = await api(`/api/workspaces/${ws}/files?path=big/file.bin`);
  expect(down.status).toBe(200);
  const hash = new Bun.CryptoHasher('sha256');
  let received = 0;
  for await (const chunk of down.body!) {
    hash.update(chunk);
    received += chunk.byteLength;
  }
  const downPeak = stopDown();
  expect(received).toBe(SIZE);
  expect(hash.digest('hex')).toBe(expectedHash);

  console.log(`RSS baseline ${(baseline / MB).toFixed(1)} MB; upload peak +${((upPeak - baseline) / MB).toFixed(1)} MB; download peak +${((downPeak - baseline) / MB).toFixed(1)} MB`);
  expect(upPeak - baseline).toBeLessThan(32 * MB);
  expect(downPeak - baseline).toBeLessThan(32 * MB);
}, 600_000);
