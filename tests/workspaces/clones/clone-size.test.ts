// The clone size cap holds where the bytes are written, not after the fact: a repo whose one blob
// compresses to almost nothing but checks out to 32 times APP_CLONE_MAX_MB ends `failed` with the
// documented reason, and the clone's temp dir, sampled all along, never grows past the cap and a
// little slack. Also: a repo whose pack alone is larger than the cap is stopped while it arrives.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { bareRepo, gitHttpServer, type GitHttpServer } from '../../helpers/git';
import { closeAndClean, waitStatus } from '../../helpers/workspaces';

const CAP_MB = 4;
const CAP = CAP_MB * 1024 * 1024;
/** What may sit beside the capped files: the pack's index, refs, config, directories. */
const SLACK = 512 * 1024;

let p: TestPlatform;
let server: GitHttpServer;
let gitRoot = '';
let sampleDir = '';
const savedTmp = process.env.TMPDIR;

beforeAll(async () => {
  gitRoot = mkdtempSync(join(tmpdir(), 'keel-git-size-'));
  // 128 MiB of zeros: a few hundred KiB as a pack, 32 times the cap once checked out.
  bareRepo('bomb', { 'zeros.bin': new Uint8Array(128 * 1024 * 1024), 'README.md': 'small\n' }, gitRoot);
  // 8 MiB that does not compress: the pack itself is twice the cap.
  bareRepo('noise', { 'noise.bin': randomBytes(8 * 1024 * 1024) }, gitRoot);
  server = gitHttpServer(gitRoot);
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_CLONE_MAX_MB: String(CAP_MB), APP_WORKSPACE_CLONE_TIMEOUT: '120' } });
  // Keel runs in this process: its clones go under this temp dir, which the test measures.
  sampleDir = mkdtempSync(join(tmpdir(), 'keel-clone-tmp-'));
  process.env.TMPDIR = sampleDir;
}, 120_000);

afterAll(async () => {
  process.env.TMPDIR = savedTmp;
  if (savedTmp === undefined) delete process.env.TMPDIR;
  server?.stop();
  await closeAndClean(p);
  for (const d of [gitRoot, sampleDir]) if (d) rmSync(d, { recursive: true, force: true });
});

/** Bytes allocated under the clone dirs in the sample dir (du: blocks, as the cap counts them). */
async function cloneBytes(): Promise<number> {
  const dirs = readdirSync(sampleDir).filter((d) => d.startsWith('keel-clone-'));
  if (dirs.length === 0) return 0;
  const du = Bun.spawn(['du', '-s', '-B1', '-c', ...dirs.map((d) => join(sampleDir, d))], { stdout: 'pipe', stderr: 'ignore' });
  const out = await new Response(du.stdout).text();
  await du.exited;
  const total = /^(\d+)\s+total$/m.exec(out);
  return total ? Number(total[1]) : 0;
}

/** Creates a workspace cloning `repo` and samples the clone's size until it settles; the view and the largest sample. */
async function cloneAndSample(name: string, repo: string) {
  const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name, template: 'minimal', repo: { url: `http://127.0.0.1:${server.port}/${repo}.git` } } });
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as { id: string };
  let max = 0;
  let samples = 0;
  let settled = false;
  const sampler = (async () => {
    while (!settled) {
      max = Math.max(max, await cloneBytes());
      samples++;
      await Bun.sleep(10);
    }
  })();
  const view = await waitStatus(p, id, 'failed', { timeoutMs: 120_000 }).finally(() => (settled = true));
  await sampler;
  return { view, max, samples };
}

const REASON = `git clone stopped: the repository takes more than ${CAP_MB} MiB on disk (APP_CLONE_MAX_MB)`;

describe('the clone size cap', () => {
  test('a small pack that checks out to 32 times the cap fails before the checkout writes it, and the temp dir stays under the cap', async () => {
    const { view, max, samples } = await cloneAndSample('zip-bomb', 'bomb');
    expect(view.reason).toBe(REASON);
    expect(view.containerId).toBeNull();
    expect(samples).toBeGreaterThan(3);
    expect(max).toBeGreaterThan(0); // the clone was seen at work in the sampled dir
    expect(max).toBeLessThan(CAP + SLACK);
    expect(await cloneBytes()).toBe(0); // removed after the failure
  }, 150_000);

  test('a pack larger than the cap is stopped as it arrives, never written past the cap', async () => {
    const { view, max } = await cloneAndSample('noise', 'noise');
    expect(view.reason).toBe(REASON);
    expect(max).toBeGreaterThan(0);
    expect(max).toBeLessThan(CAP + SLACK);
    expect(await cloneBytes()).toBe(0);
  }, 150_000);
});
