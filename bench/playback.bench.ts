// Playback: time to the first HLS segment through the whole path (POST /sessions, playlists, the
// segment request -> workers job -> ffmpeg -> cache -> answer), stream copy and transcode, against
// ffmpeg writing the same segment directly (the same arguments, no Keel); then segments/s with 10
// viewers each playing a different asset from start to end at once, against ffmpeg making the same
// segments two at a time (the workers' default concurrency). In-process bus.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform } from '../src/main';
import { segmentArgs } from '../src/services/workers/jobs/playback-segment';
import { cutSegments } from '../src/services/playback/hls';
import { catalogToken, patientScan, playbackFixtures, tempMediaRoot } from '../tests/helpers/media';
import { mintToken } from '../src/platform/auth/workspace-token';
import { median, printTable, round } from './lib';

const SECRET = 'e'.repeat(64);

async function ffmpegDirect(input: string, startMs: number, endMs: number, method: 'copy' | 'transcode', dir: string): Promise<number> {
  const t0 = performance.now();
  const args = segmentArgs({ assetId: 'x', root: 0, path: '', index: 0, startMs, endMs, method, output: '' }, input, join(dir, `d-${Math.random()}-%d.ts`));
  const proc = Bun.spawn(['ffmpeg', ...args], { stdout: 'ignore', stderr: 'ignore' });
  if ((await proc.exited) !== 0) throw new Error('ffmpeg failed');
  return performance.now() - t0;
}

export async function run(): Promise<Record<string, unknown>> {
  const fx = playbackFixtures();
  const media = tempMediaRoot('keel-bench-play-');
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-playdata-'));
  const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-direct-'));
  const REPS = 5;
  const VIEWERS = 10;
  for (let i = 0; i < REPS; i++) {
    media.place(`copy/${i}.mp4`, fx.mp4);
    media.place(`tx/${i}.mkv`, fx.transcode);
  }
  for (let i = 0; i < VIEWERS; i++) media.place(`viewers/${i}.mp4`, fx.mp4);
  const p = await startPlatform({
    ...process.env,
    NODE_ENV: 'test',
    APP_DATA_DIR: dataDir,
    APP_API_SECRET: SECRET,
    APP_SERVICES: 'catalog,identity,sources,workers,playback',
    APP_CATALOG_PORT: '0', APP_SOURCES_PORT: '0', APP_WORKERS_PORT: '0', APP_IDENTITY_PORT: '0', APP_PLAYBACK_PORT: '0',
    APP_MEDIA_ROOTS: media.root,
    APP_BUS: 'memory',
    APP_LOG_LEVEL: 'error',
  });
  try {
    const api = (service: 'identity', path: string, init: RequestInit & { as?: string | null; json?: unknown } = {}) => {
      const headers = new Headers(init.headers);
      if (init.as !== null) headers.set('authorization', `Bearer ${mintToken(SECRET, { sub: 'admin', ttlSeconds: 3600, role: 'admin' })}`);
      if (init.json !== undefined) headers.set('content-type', 'application/json');
      return fetch(p.urls[service] + path, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
    };
    const token = await catalogToken({ api }, 'bench', ['resource:asset:scan', 'resource:asset:play']);
    const urls = { url: () => p.urls.catalog! };
    const scan = async (path: string) => ((await (await patientScan(urls, { path }, token)).json()) as { asset: { id: string } }).asset.id;
    const session = async (assetId: string) => {
      for (;;) {
        const res = await fetch(p.urls.playback + '/sessions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ assetId }) });
        if (res.status === 201) return ((await res.json()) as { session: { url: string } }).session.url;
        await res.body?.cancel();
        await Bun.sleep(20);
      }
    };
    const segmentsOf = async (master: string) => {
      const text = await (await fetch(new URL('media.m3u8', master))).text();
      const list = text.split('\n').filter((l) => l.endsWith('.ts')).map((l) => new URL(l, master).toString());
      if (!list.length) throw new Error(`no segments: ${master} ${text.slice(0, 300)}`);
      return list;
    };

    const first: Record<'copy' | 'transcode', { keel: number[]; direct: number[] }> = { copy: { keel: [], direct: [] }, transcode: { keel: [], direct: [] } };
    for (const [method, dir, ext, src] of [['copy', 'copy', 'mp4', fx.mp4], ['transcode', 'tx', 'mkv', fx.transcode]] as const) {
      const ids = [];
      for (let i = 0; i < REPS; i++) ids.push(await scan(`${dir}/${i}.${ext}`));
      const masters = [];
      for (const id of ids) masters.push(await session(id));
      const probe = await (await fetch(p.urls.catalog + `/scan`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ path: `${dir}/0.${ext}` }) })).json();
      const seg0 = cutSegments(probe.index.keyframesMs, probe.index.durationMs, 6000)[0]!;
      for (const master of masters) {
        const t0 = performance.now();
        const segs = await segmentsOf(master);
        const res = await fetch(segs[0]!);
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`segment answered ${res.status}`);
        first[method].keel.push(performance.now() - t0);
        // Let the made-ahead segments finish so the next measure starts on an idle worker.
        await Bun.sleep(1500);
        first[method].direct.push(await ffmpegDirect(src, seg0.startMs, seg0.endMs, method, scratch));
      }
    }

    const viewerIds = [];
    for (let i = 0; i < VIEWERS; i++) viewerIds.push(await scan(`viewers/${i}.mp4`));
    const viewerMasters = await Promise.all(viewerIds.map(session));
    const t0 = performance.now();
    const counts = await Promise.all(
      viewerMasters.map(async (m) => {
        let n = 0;
        for (const s of await segmentsOf(m)) {
          const res = await fetch(s);
          await res.arrayBuffer();
          if (res.status === 200) n++;
        }
        return n;
      }),
    );
    const keelSeconds = (performance.now() - t0) / 1000;
    const total = counts.reduce((a, b) => a + b, 0);
    // Baseline: the same segments by ffmpeg alone, two at a time.
    const plan = cutSegments([2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000], 20000, 6000);
    const tasks = Array.from({ length: VIEWERS }, () => plan).flat();
    const d0 = performance.now();
    let next = 0;
    await Promise.all([0, 1].map(async () => {
      while (next < tasks.length) {
        const s = tasks[next++]!;
        await ffmpegDirect(fx.mp4, s.startMs, s.endMs, 'copy', scratch);
      }
    }));
    const directSeconds = (performance.now() - d0) / 1000;

    const rows = (['copy', 'transcode'] as const).map((m) => ({
      measure: `first segment, ${m}: ms (median of ${REPS})`,
      keel: round(median(first[m].keel), 0),
      ffmpegDirect: round(median(first[m].direct), 0),
      ratio: round(median(first[m].keel) / median(first[m].direct), 2),
    }));
    rows.push({
      measure: `${VIEWERS} viewers, ${total} segments: segments/s`,
      keel: round(total / keelSeconds, 1),
      ffmpegDirect: round(tasks.length / directSeconds, 1),
      ratio: round(total / keelSeconds / (tasks.length / directSeconds), 2),
    });
    printTable('Playback: Keel against ffmpeg writing the same segments', rows);
    return { rows };
  } finally {
    await p.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
    rmSync(media.root, { recursive: true, force: true });
  }
}
