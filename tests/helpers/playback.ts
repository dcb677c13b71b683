// Shared steps of the playback tests: a platform with every media service on NATS, assets scanned as
// a user would, and sessions opened through HTTP.
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogToken, patientScan } from './media';
import { requireTestEnv, startTestPlatform, type TestPlatform } from './platform';

export const PLAY = 'resource:asset:play';

export async function startPlaybackPlatform(mediaRoot: string, env: Record<string, string> = {}) {
  const p = await startTestPlatform({
    services: ['catalog', 'identity', 'sources', 'workers', 'playback'],
    env: { APP_MEDIA_ROOTS: mediaRoot, APP_BUS: requireTestEnv('KEEL_TEST_NATS_URL'), APP_WORKERS_POLL_MS: '100', ...env },
  });
  const token = await catalogToken(p, 'viewer', ['resource:asset:scan', PLAY]);
  return { p, token };
}

/** Scans `path` and answers its asset id and index. */
export async function scanAsset(p: TestPlatform, token: string, path: string) {
  const res = await patientScan(p, { path }, token);
  if (res.status !== 200) throw new Error(`scan ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { asset: { id: string }; index: { keyframesMs: number[]; durationMs: number } | null; indexed: boolean };
}

export const postSession = (p: TestPlatform, token: string | null, body: unknown) =>
  fetch(p.url('playback') + '/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

/**
 * Opens a session once the sources service has heard of the asset (it learns from the catalog's
 * event, relayed after the scan commits: until then the asset has no readable copy).
 */
export async function openPlayback(p: TestPlatform, token: string, assetId: string, mode: 'direct' | 'hls' = 'hls') {
  for (let i = 0; i < 100; i++) {
    const res = await postSession(p, token, { assetId, mode });
    if (res.status === 201) return ((await res.json()) as { session: { id: string; url: string; mode: string; assetId: string; expiresAt: number } }).session;
    const body = await res.text();
    if (res.status !== 409 || !body.includes('PLAYBACK_SOURCE_UNAVAILABLE')) throw new Error(`POST /sessions: ${res.status} ${body}`);
    await Bun.sleep(50);
  }
  throw new Error('the sources service never learnt of the asset');
}

/** The segment URLs of an HLS session, from its playlists as a player reads them. */
export async function segmentUrls(masterUrl: string): Promise<{ media: string; segments: { url: string; durationS: number }[] }> {
  const master = await (await fetch(masterUrl)).text();
  const mediaName = master.split('\n').find((l) => l && !l.startsWith('#'))!;
  const media = await (await fetch(new URL(mediaName, masterUrl))).text();
  const lines = media.split('\n');
  const segments: { url: string; durationS: number }[] = [];
  lines.forEach((l, i) => {
    if (l.startsWith('#EXTINF:')) segments.push({ url: new URL(lines[i + 1]!, masterUrl).toString(), durationS: Number(l.slice(8).split(',')[0]) });
  });
  return { media, segments };
}

/**
 * One 2 s medium per container a browser plays directly (MKV, WebM, MOV, MP3, M4A, FLAC, Ogg),
 * made by ffmpeg once per machine run; each named with the media type direct play must serve it as.
 */
export function directPlayFixtures(): { file: string; name: string; type: string; ext: string }[] {
  const dir = join(tmpdir(), 'keel-direct-play-fixtures-v1');
  mkdirSync(dir, { recursive: true });
  const av = ['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=24:duration=2', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=2'];
  const audio = ['-f', 'lavfi', '-i', 'sine=frequency=330:sample_rate=48000:duration=2'];
  const h264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '64k'];
  const specs = [
    { name: 'Clip.mkv', type: 'video/x-matroska', ext: 'mkv', args: [...av, ...h264, '-f', 'matroska'] },
    { name: 'Clip.webm', type: 'video/webm', ext: 'webm', args: [...av, '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '200k', '-c:a', 'libopus', '-f', 'webm'] },
    { name: 'Clip.mov', type: 'video/quicktime', ext: 'mov', args: [...av, ...h264, '-f', 'mov'] },
    { name: 'Song.mp3', type: 'audio/mpeg', ext: 'mp3', args: [...audio, '-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'] },
    { name: 'Song.m4a', type: 'audio/mp4', ext: 'm4a', args: [...audio, '-c:a', 'aac', '-b:a', '64k', '-f', 'ipod'] },
    { name: 'Song.flac', type: 'audio/flac', ext: 'flac', args: [...audio, '-c:a', 'flac', '-f', 'flac'] },
    { name: 'Song.ogg', type: 'audio/ogg', ext: 'ogg', args: [...audio, '-c:a', 'libvorbis', '-f', 'ogg'] },
  ];
  return specs.map(({ args, ...spec }) => {
    const file = join(dir, spec.name);
    if (!existsSync(file)) {
      const tmp = join(dir, `.${process.pid}.${spec.name}`);
      const res = Bun.spawnSync(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', ...args, tmp], { stdout: 'pipe', stderr: 'pipe' });
      if (res.exitCode !== 0) throw new Error(`ffmpeg ${spec.name}: ${res.stderr.toString().slice(0, 500)}`);
      renameSync(tmp, file);
    }
    return { file, ...spec };
  });
}
