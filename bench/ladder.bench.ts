// The media server's new costs (issue 33). (1) Time to the first segment of the transcoded 720p rung
// of a 1080p source through the whole path (POST /sessions, master and rung playlists, the segment
// request -> workers job -> ffmpeg -> cache -> answer) against ffmpeg cutting the same segment
// directly with the same arguments (aim: at most 1.5x). (2) What reading .nfo files and artwork adds
// to a library scan: a full first scan of 40 small movies, each with its .nfo and poster, against
// the same movies bare (aim: at most 10 %). In-process bus, SQLite.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform } from '../src/main';
import { mintToken } from '../src/platform/auth/workspace-token';
import { cutSegments, RUNG_KBPS } from '../src/services/playback/hls';
import { segmentArgs } from '../src/services/workers/jobs/playback-segment';
import { scanLibrary } from '../tests/helpers/library';
import { catalogToken, localFixtures, patientScan, tempMediaRoot } from '../tests/helpers/media';
import { median, printTable, round } from './lib';

const SECRET = 'f'.repeat(64);
const REPS = 3;
const MOVIES = 40;

/** 8 s of 1920x1080 H.264/AAC with a keyframe every 2 s. */
function source1080(dir: string): string {
  const out = join(dir, 'source-1080p.mp4');
  const res = Bun.spawnSync([
    'ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=1920x1080:rate=24:duration=8',
    '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=8', '-c:v', 'libx264', '-preset', 'veryfast', '-g', '48',
    '-keyint_min', '48', '-sc_threshold', '0', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '64k', '-f', 'mp4', out,
  ]);
  if (res.exitCode !== 0) throw new Error('ffmpeg could not make the 1080p source');
  return out;
}

async function platform(mediaRoot: string, dataDir: string) {
  const p = await startPlatform({
    ...process.env,
    NODE_ENV: 'test',
    APP_DATA_DIR: dataDir,
    APP_API_SECRET: SECRET,
    APP_SERVICES: 'catalog,identity,sources,workers,playback',
    APP_CATALOG_PORT: '0', APP_SOURCES_PORT: '0', APP_WORKERS_PORT: '0', APP_IDENTITY_PORT: '0', APP_PLAYBACK_PORT: '0',
    APP_MEDIA_ROOTS: mediaRoot,
    APP_BUS: 'memory',
    APP_LOG_LEVEL: 'error',
    APP_WORKERS_POLL_MS: '20',
  });
  const api = (service: 'identity', path: string, init: RequestInit & { as?: string | null; json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    if (init.as !== null) headers.set('authorization', `Bearer ${mintToken(SECRET, { sub: 'admin', ttlSeconds: 3600, role: 'admin' })}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    return fetch(p.urls[service] + path, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
  };
  const token = await catalogToken({ api }, 'bench', ['resource:asset:scan', 'resource:asset:play']);
  return { p, token };
}

async function firstRungSegment(scratch: string) {
  const media = tempMediaRoot('keel-bench-ladder-');
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-ladderdata-'));
  const src = source1080(scratch);
  for (let i = 0; i < REPS; i++) media.place(`ladder/${i}.mp4`, src);
  const { p, token } = await platform(media.root, dataDir);
  const keel: number[] = [];
  const direct: number[] = [];
  try {
    for (let i = 0; i < REPS; i++) {
      const scanned = (await (await patientScan({ url: () => p.urls.catalog! }, { path: `ladder/${i}.mp4` }, token)).json()) as { asset: { id: string }; index: { keyframesMs: number[]; durationMs: number } };
      let master = '';
      for (;;) {
        const res = await fetch(p.urls.playback + '/sessions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ assetId: scanned.asset.id }) });
        if (res.status === 201) {
          master = ((await res.json()) as { session: { url: string } }).session.url;
          break;
        }
        await res.body?.cancel();
        await Bun.sleep(20);
      }
      const t0 = performance.now();
      const listing = await (await fetch(master)).text();
      if (!listing.includes('media-720p.m3u8')) throw new Error('no 720p rung in the master playlist');
      const rung = await (await fetch(new URL('media-720p.m3u8', master))).text();
      const first = rung.split('\n').find((l) => l.endsWith('.ts'))!;
      const seg = await fetch(new URL(first, master));
      await seg.arrayBuffer();
      if (seg.status !== 200) throw new Error(`segment answered ${seg.status}`);
      keel.push(performance.now() - t0);
      await Bun.sleep(3000); // the segments made ahead finish, so the baseline runs on an idle machine
      const s0 = cutSegments(scanned.index.keyframesMs, scanned.index.durationMs, 6000)[0]!;
      const args = segmentArgs({ assetId: 'x', root: 0, path: '', index: 0, startMs: s0.startMs, endMs: s0.endMs, method: 'copy', height: 720, videoKbps: RUNG_KBPS[720], output: '' }, src, join(scratch, `d-${i}-%d.ts`));
      const d0 = performance.now();
      const proc = Bun.spawn(['ffmpeg', ...args], { stdout: 'ignore', stderr: 'ignore' });
      if ((await proc.exited) !== 0) throw new Error('ffmpeg failed');
      direct.push(performance.now() - d0);
    }
  } finally {
    await p.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(media.root, { recursive: true, force: true });
  }
  return { keel: median(keel), direct: median(direct) };
}

async function scanTime(withSidecars: boolean): Promise<number> {
  const fx = localFixtures();
  const media = tempMediaRoot('keel-bench-nfo-');
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-nfodata-'));
  for (let i = 0; i < MOVIES; i++) {
    const dir = `Movies/Film ${i} (${1950 + i})`;
    media.place(`${dir}/Film ${i} (${1950 + i}).mkv`, fx.plain);
    if (withSidecars) {
      writeFileSync(join(media.root, dir, `Film ${i} (${1950 + i}).nfo`), `<movie><title>Film ${i}</title><originaltitle>Le Film ${i}</originaltitle><plot>Plot ${i}.</plot><genre>Drama</genre><year>${1950 + i}</year></movie>`);
      media.place(`${dir}/poster.jpg`, fx.poster);
      media.place(`${dir}/fanart.png`, fx.backdrop);
    }
  }
  const { p, token } = await platform(media.root, dataDir);
  try {
    const t0 = performance.now();
    const scan = await scanLibrary(p.urls.catalog!, token);
    if (scan.counts.added !== MOVIES) throw new Error(`scan added ${scan.counts.added}`);
    return performance.now() - t0;
  } finally {
    await p.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(media.root, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-ladder-direct-'));
  try {
    const first = await firstRungSegment(scratch);
    // Alternated, twice each, so a load spike on the shared machine does not land on one side only.
    const bare: number[] = [];
    const rich: number[] = [];
    for (let i = 0; i < 2; i++) {
      bare.push(await scanTime(false));
      rich.push(await scanTime(true));
    }
    const rows = [
      { measure: `first segment of the 720p rung of a 1080p source: ms (median of ${REPS})`, keel: round(first.keel, 0), baseline: round(first.direct, 0), ratio: round(first.keel / first.direct, 2) },
      { measure: `first library scan of ${MOVIES} movies: ms, with .nfo and artwork (keel) against bare (baseline)`, keel: round(Math.min(...rich), 0), baseline: round(Math.min(...bare), 0), ratio: round(Math.min(...rich) / Math.min(...bare), 2) },
    ];
    printTable('Ladder and local metadata', rows);
    return { rows };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
