// APP_LIBRARY_PROBES_PER_ROOT bounds the probes a scan runs at once on one media root, even when
// the media engine would allow more: counted on the real ffprobe processes while a scan runs.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { scanLibrary } from '../helpers/library';
import { catalogToken, playbackFixtures, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
const FILES = 8;

beforeAll(async () => {
  root = tempMediaRoot();
  // MPEG-4 Part 2 and MP3: codecs the native header reader leaves to ffprobe, so each file is an ffprobe run.
  for (let i = 1; i <= FILES; i++) root.place(`clips/clip ${i}.mkv`, playbackFixtures().transcode);
  p = await startTestPlatform({
    services: ['identity', 'catalog', 'workers'],
    env: { APP_MEDIA_ROOTS: root.root, APP_PROBE_CONCURRENCY: '8', APP_LIBRARY_PROBES_PER_ROOT: '2', APP_LIBRARY_BATCH: String(FILES), APP_WORKERS_POLL_MS: '50' },
  });
});
afterAll(async () => {
  await p?.close();
  rmSync(root.root, { recursive: true, force: true });
});

/** Files under the root that an ffprobe process is reading right now. */
function probedNow(): Set<string> {
  const files = new Set<string>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!args[0]?.includes('ffprobe')) continue;
    // The media engine names the file as `file:<path>`.
    for (const a of args) if (a.startsWith(`file:${root.root}/`)) files.add(a);
  }
  return files;
}

test('no more files are probed at once on a root than APP_LIBRARY_PROBES_PER_ROOT', async () => {
  const token = await catalogToken(p, 'bounded');
  let most = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      most = Math.max(most, probedNow().size);
      await Bun.sleep(2);
    }
  })();
  const scan = await scanLibrary(p, token);
  sampling = false;
  await sampler;
  expect(scan.counts).toMatchObject({ added: FILES, failed: 0 });
  expect(most).toBeGreaterThanOrEqual(1); // the sampler did see probes run
  expect(most).toBeLessThanOrEqual(2);
});
