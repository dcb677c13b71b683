// Catalog benchmarks, one run, each against a baseline measured in the same run:
//  1. POST /scan of a small MKV and of a small MP4 (through HTTP, Bearer guard, bus, the native
//     header reader or ffprobe, Cues or stss, SQLite) against a bare `ffprobe -show_format
//     -show_streams` of the same file, and the same scan with the native reader off (ffprobe only).
//  2. Keyframe index of a ~1 GiB MKV from its Cues against the ffprobe packet scan (results must agree).
//  3. GET /works?pageSize=200 over 100,000 works (rows bulk-inserted), against GET /health.
// `bun run bench catalog` (or `bun bench/catalog.bench.ts`; `BENCH_CATALOG=scan` runs the scan rows only).
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform } from '../src/main';
import { mintToken } from '../src/platform/auth/workspace-token';
import { createFfprobe } from '../src/services/catalog/media-engine/ffprobe';
import { containerIndexKeyframes } from '../src/services/catalog/media-engine/keyframes';
import { createProbeAnswerer } from '../src/services/catalog/media-engine/probe.answerer';
import { mediaFixtures } from '../tests/helpers/media';
import { load, printTable, round, summarize } from './lib';
import type { ActorWithKey, TokenPair } from '../clients/typescript/src';

const SECRET = 'd'.repeat(64);

const time = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
};

function ffmpeg(args: string[]) {
  const r = Bun.spawnSync(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', ...args], { stdout: 'pipe', stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`ffmpeg: ${r.stderr.toString().slice(0, 300)}`);
}

async function scanToken(identity: string, name: string): Promise<string> {
  const admin = mintToken(SECRET, { sub: 'bench', role: 'admin', ttlSeconds: 600 });
  const { apiKey } = (await fetch(identity + '/actors', {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, policies: ['resource:asset:scan'] }),
  }).then((r) => r.json())) as ActorWithKey;
  const { accessToken } = (await fetch(identity + '/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiKey }),
  }).then((r) => r.json())) as TokenPair;
  return accessToken;
}

/** Scans of `name` (two fresh actors, 20 scans each, the first two ignored) against bare ffprobe runs, interleaved. */
async function scanVsFfprobe(root: string, catalog: string, identity: string, from: string, name: string, label: string) {
  Bun.spawnSync(['cp', from, join(root, name)]);
  const file = join(root, name);
  const N = 20; // the scan budget is 20 per actor in a burst: one fresh actor per 20 scans
  const scans: number[] = [];
  const bare: number[] = [];
  const ffprobeOnce = async () => {
    const p = Bun.spawn(['ffprobe', '-v', 'error', '-show_format', '-show_streams', '-of', 'json', file], { stdout: 'pipe' });
    await new Response(p.stdout).text();
    await p.exited;
  };
  for (let round_ = 0; round_ < 2; round_++) {
    const token = await scanToken(identity, `bench-${label}-${round_}`);
    for (let i = 0; i < N; i++) {
      const [res, ms] = await time(() =>
        fetch(catalog + '/scan', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ path: name }),
        }),
      );
      if (res.status !== 200) throw new Error(`scan answered ${res.status}`);
      const body = (await res.json()) as { indexed: boolean };
      if (!body.indexed) throw new Error(`${name} was not indexed`);
      const [, bareMs] = await time(ffprobeOnce);
      if (round_ > 0 || i > 1) {
        scans.push(ms); // the first two warm up
        bare.push(bareMs);
      }
    }
  }
  const s = summarize(scans);
  const b = summarize(bare);
  return { file: label, scanMedianMs: round(s.medianMs), scanP99Ms: round(s.p99Ms), ffprobeMedianMs: round(b.medianMs), ratioMedian: round(s.medianMs / b.medianMs) };
}

/** The probe answer alone (no HTTP, no SQLite): the native reader against ffprobe, same file, same process. */
async function probeAlone(root: string, name: string, label: string) {
  const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 2, probeSizeBytes: 10_000_000, analyzeDurationUs: 10_000_000, timeoutMs: 30_000 });
  const native = createProbeAnswerer({ mediaRoots: [root], ffprobe });
  const only = createProbeAnswerer({ mediaRoots: [root], ffprobe, native: false });
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < 32; i++) {
    const [ra, msA] = await time(() => native.probe({ root: 0, path: name }));
    const [rb, msB] = await time(() => only.probe({ root: 0, path: name }));
    if (JSON.stringify(ra) !== JSON.stringify(rb)) throw new Error(`${name}: the native answer differs from ffprobe's`);
    if (i > 1) {
      a.push(msA);
      b.push(msB);
    }
  }
  return { file: label, nativeMedianMs: round(summarize(a).medianMs, 2), ffprobeOnlyMedianMs: round(summarize(b).medianMs), same: true };
}

async function largeMkvKeyframes() {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-mkv-'));
  try {
    const clip = join(dir, 'clip.mkv');
    const big = join(dir, 'big.mkv');
    // A 4 s lossless clip of noise is ~170 MB in 2 s of encoding; looping it with -c copy makes 1 GB fast.
    const [, genClipMs] = await time(async () =>
      ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=4,noise=alls=60:allf=t', '-f', 'lavfi', '-i', 'sine=frequency=300:duration=4',
        '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-g', '25', '-c:a', 'aac', '-f', 'matroska', clip]),
    );
    const loops = Math.max(1, Math.ceil(1.05 * 2 ** 30 / statSync(clip).size) - 1);
    const [, genBigMs] = await time(async () => ffmpeg(['-stream_loop', String(loops), '-i', clip, '-c', 'copy', '-f', 'matroska', big]));
    rmSync(clip);
    const sizeBytes = statSync(big).size;
    const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 1, probeSizeBytes: 10_000_000, analyzeDurationUs: 10_000_000, timeoutMs: 600_000 });
    const cueRuns: number[] = [];
    let cues: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [r, ms] = await time(() => containerIndexKeyframes(big, 'mkv'));
      cues = r!.ms;
      cueRuns.push(ms);
    }
    const [scan, scanMs] = await time(() => ffprobe.keyframePacketScan(big));
    const agree = JSON.stringify(scan) === JSON.stringify(cues);
    const cueMs = summarize(cueRuns).medianMs;
    return {
      sizeMiB: round(sizeBytes / 2 ** 20, 0), keyframes: cues.length, generateSeconds: round((genClipMs + genBigMs) / 1000, 1),
      cuesMs: round(cueMs, 2), packetScanMs: round(scanMs, 0), speedup: round(scanMs / cueMs, 0), agree,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function worksListing(dataDir: string, catalog: string) {
  const db = new Database(join(dataDir, 'keel.db'));
  db.exec('PRAGMA busy_timeout = 5000');
  const t0 = Date.now();
  const insert = db.prepare('INSERT INTO catalog_works (id, kind, title, original_title, year, match_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 100_000; i++) {
      const title = `Bench Work ${i}`;
      insert.run(`wrk_bench${String(i).padStart(7, '0')}`, 'movie', title, title, 1950 + (i % 70), `movie|bench work ${i}|${1950 + (i % 70)}`, t0 + i, t0 + i);
    }
  })();
  db.close();
  const total = ((await (await fetch(catalog + '/works?pageSize=1')).json()) as { total: number }).total;
  const health = await load(() => fetch(catalog + '/health').then((r) => r.arrayBuffer()), { total: 3000, concurrency: 8 });
  const first = await load(() => fetch(catalog + '/works?pageSize=200').then((r) => r.arrayBuffer()), { total: 1500, concurrency: 8 });
  const anyPage = await load(
    () => fetch(catalog + `/works?pageSize=200&page=${1 + Math.floor(Math.random() * 500)}`).then((r) => r.arrayBuffer()),
    { total: 1500, concurrency: 8 },
  );
  return {
    total,
    healthRps: round(health.rps, 0), healthP99Ms: round(health.p99Ms),
    firstPageRps: round(first.rps, 0), firstPageP99Ms: round(first.p99Ms),
    randomPageRps: round(anyPage.rps, 0), randomPageP99Ms: round(anyPage.p99Ms),
    firstPageVsHealth: round(first.rps / health.rps),
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-catalog-'));
  const root = mkdtempSync(join(tmpdir(), 'keel-bench-media-'));
  const p = await startPlatform({
    ...process.env, NODE_ENV: 'test', APP_QUIET_TOKEN: '1', APP_DATA_DIR: dataDir, APP_API_SECRET: SECRET, APP_BUS: 'memory',
    APP_SERVICES: 'catalog,identity', APP_CATALOG_PORT: '0', APP_IDENTITY_PORT: '0', APP_MEDIA_ROOTS: root,
  });
  try {
    const fx = mediaFixtures();
    const scan = [
      await scanVsFfprobe(root, p.urls.catalog!, p.urls.identity!, fx.mkvSubs, 'Bench Movie (2020).mkv', 'MKV (H.264, AAC, 2 subtitles)'),
      await scanVsFfprobe(root, p.urls.catalog!, p.urls.identity!, fx.mp4Subs, 'Bench Film (2021).mp4', 'MP4 (H.264, AAC, mov_text)'),
    ];
    printTable('POST /scan vs bare ffprobe, interleaved (ms)', scan);
    const probe = [await probeAlone(root, 'Bench Movie (2020).mkv', 'MKV'), await probeAlone(root, 'Bench Film (2021).mp4', 'MP4')];
    printTable('The probe alone: native reader vs ffprobe only (same answers, ms)', probe);
    if (process.env.BENCH_CATALOG === 'scan') return { scan, probe };
    const keyframes = await largeMkvKeyframes();
    printTable('Keyframe index of a large MKV: Cues vs packet scan', [keyframes]);
    const works = await worksListing(dataDir, p.urls.catalog!);
    printTable('GET /works?pageSize=200 over 100,000 works', [works]);
    return { scan, probe, keyframes, works };
  } finally {
    await p.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.main) await run();
