// Audio, subtitles and the ladder through HTTP on a real platform (catalog, identity, sources,
// workers, playback on NATS) with media made by ffmpeg: the assets list every audio and subtitle
// track; master playlists carry each audio stream and text subtitle as a rendition and a ladder of
// H.264 rungs below the source, with CODECS, RESOLUTION and BANDWIDTH; ffmpeg reads every rendition
// as an HLS client; every segment of every rendition starts on a keyframe at the same boundaries.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ffprobeJson, ladderFixture, localFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, scanAsset, segmentUrls, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let token: string;
let root: ReturnType<typeof tempMediaRoot>;
let multi: { id: string; workId: string };
let ladder: { id: string; keyframesMs: number[]; durationMs: number };
let dolby: string;

beforeAll(async () => {
  const fx = localFixtures();
  root = tempMediaRoot();
  root.place('Movies/Babel (2006)/Babel (2006).mkv', fx.multi);
  writeFileSync(join(root.root, 'Movies/Babel (2006)/Babel (2006).en.srt'), '1\n00:00:00,100 --> 00:00:00,900\nSidecar hello\n');
  writeFileSync(join(root.root, 'Movies/Babel (2006)/Babel (2006).fr.forced.vtt'), 'WEBVTT\n\n00:00:00.200 --> 00:00:00.800\nBonjour fichier\n');
  writeFileSync(join(root.root, 'Movies/Babel (2006)/Other.en.srt'), '1\n00:00:00,100 --> 00:00:00,900\nNot ours\n');
  root.place('Movies/Ladder (2020).mp4', ladderFixture());
  // H.264 beside AC-3 alone: the common Blu-ray rip. Made from the two-audio fixture, streams copied.
  const ac3 = Bun.spawnSync(['ffmpeg', '-v', 'error', '-y', '-i', fx.multi, '-map', '0:v', '-map', '0:a:1', '-c', 'copy', join(root.root, 'Movies/Dolby (2001).mkv')]);
  if (ac3.exitCode !== 0) throw new Error('ffmpeg could not make the AC-3 file');
  ({ p, token } = await startPlaybackPlatform(root.root, { APP_PLAYBACK_SEGMENT_MS: '1000' }));
  const m = await scanAsset(p, token, 'Movies/Babel (2006)/Babel (2006).mkv');
  const works = (await (await fetch(p.url('catalog') + '/works?q=babel')).json()) as { works: { id: string }[] };
  multi = { id: m.asset.id, workId: works.works[0]!.id };
  const l = await scanAsset(p, token, 'Movies/Ladder (2020).mp4');
  ladder = { id: l.asset.id, keyframesMs: l.index!.keyframesMs, durationMs: l.index!.durationMs };
  dolby = (await scanAsset(p, token, 'Movies/Dolby (2001).mkv')).asset.id;
});

afterAll(async () => {
  await p?.close();
  if (root) rmSync(root.root, { recursive: true, force: true });
});

async function run(cmd: string[]) {
  const proc = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

async function probeBytes(bytes: ArrayBuffer, args: string[] = ['-show_streams']) {
  const file = join(p.dataDir, `probe-${Math.random().toString(36).slice(2)}.ts`);
  await Bun.write(file, bytes);
  try {
    return ffprobeJson(file, args);
  } finally {
    rmSync(file, { force: true });
  }
}

const attrs = (line: string) => Object.fromEntries([...line.matchAll(/([A-Z-]+)=("[^"]*"|[^,]*)/g)].map((m) => [m[1], m[2]!.replace(/^"|"$/g, '')]));

describe('GET /works/{id}/assets: audio and subtitles', () => {
  test('lists every audio stream and every subtitle, embedded and sidecar, languages as ISO 639-2/T', async () => {
    const res = await fetch(p.url('catalog') + `/works/${multi.workId}/assets`);
    const [asset] = ((await res.json()) as { assets: any[] }).assets;
    expect(asset.audio).toEqual([
      { index: 1, language: 'eng', codec: 'aac', channels: 2, default: true },
      { index: 2, language: 'fra', codec: 'ac3', channels: 6, default: false },
    ]);
    expect(asset.subtitles).toEqual([
      { index: 3, language: 'deu', format: 'srt', text: true, source: 'embedded' },
      { language: 'eng', format: 'srt', text: true, source: 'sidecar' },
      { language: 'fra', format: 'vtt', text: true, source: 'sidecar' },
    ]);
  });
});

describe('audio and subtitle renditions', () => {
  let url: string;
  let master: string;
  beforeAll(async () => {
    url = (await openPlayback(p, token, multi.id)).url;
    master = await (await fetch(url)).text();
  });

  test('the master playlist has an AUDIO rendition per audio stream and a SUBTITLES rendition per text subtitle', () => {
    const media = master.split('\n').filter((l) => l.startsWith('#EXT-X-MEDIA:')).map(attrs);
    expect(media.filter((m) => m.TYPE === 'AUDIO').map((m) => [m.LANGUAGE, m.NAME, m.DEFAULT, m.URI])).toEqual([
      ['eng', 'English (AAC Stereo)', 'YES', undefined],
      ['fra', 'French (AC3 5.1)', 'NO', 'audio-2.m3u8'],
    ]);
    expect(media.filter((m) => m.TYPE === 'SUBTITLES').map((m) => [m.LANGUAGE, m.NAME, m.FORCED, m.URI])).toEqual([
      ['deu', 'German', 'NO', 'subtitles-0.m3u8'],
      ['eng', 'English', 'NO', 'subtitles-1.m3u8'],
      ['fra', 'French', 'YES', 'subtitles-2.m3u8'],
    ]);
    const inf = attrs(master.split('\n').find((l) => l.startsWith('#EXT-X-STREAM-INF:'))!);
    expect(inf).toMatchObject({ AUDIO: 'audio', SUBTITLES: 'subs', RESOLUTION: '160x120' });
  });

  test('the AC-3 5.1 stream plays as its own AAC stereo rendition cut at the same boundaries', async () => {
    const main = await segmentUrls(url);
    const audio = await (await fetch(new URL('audio-2.m3u8', url))).text();
    const durations = [...audio.matchAll(/#EXTINF:([\d.]+),/g)].map((m) => Number(m[1]));
    expect(durations).toEqual(main.segments.map((s) => s.durationS));
    const seg = await fetch(new URL('audio-2-segment-0.ts', url));
    expect(seg.status).toBe(200);
    const streams = (await probeBytes(await seg.arrayBuffer())).streams as { codec_type: string; codec_name: string; channels: number }[];
    expect(streams.map((s) => [s.codec_type, s.codec_name, s.channels])).toEqual([['audio', 'aac', 2]]);
  });

  test('an embedded subtitle is served as WebVTT aligned to the segments (X-TIMESTAMP-MAP)', async () => {
    const playlist = await (await fetch(new URL('subtitles-0.m3u8', url))).text();
    const main = await segmentUrls(url);
    expect([...playlist.matchAll(/#EXTINF:([\d.]+),/g)].map((m) => Number(m[1]))).toEqual(main.segments.map((s) => s.durationS));
    expect(playlist).toContain('subtitles-0-0.vtt');
    const piece = await (await fetch(new URL('subtitles-0-0.vtt', url))).text();
    expect(piece).toContain('X-TIMESTAMP-MAP=MPEGTS:900000');
    expect(piece).toContain('Hello');
    const vtt = await fetch(new URL('subtitles-0.vtt', url));
    expect(vtt.status).toBe(200);
    expect(vtt.headers.get('content-type')).toStartWith('text/vtt');
    const text = await vtt.text();
    expect(text).toStartWith('WEBVTT');
    expect(text).toContain('X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000');
    expect(text).toContain('Hello');
  });

  test('sidecar .srt and .vtt files are WebVTT renditions too; a file of another medium is not', async () => {
    expect(await (await fetch(new URL('subtitles-1.vtt', url))).text()).toContain('Sidecar hello');
    expect(await (await fetch(new URL('subtitles-2.vtt', url))).text()).toContain('Bonjour fichier');
    expect(master).not.toContain('subtitles-3');
  });

  test('ffmpeg as an HLS client reads the master playlist with its renditions without an error', { timeout: 60_000 }, async () => {
    const decoded = await run(['ffmpeg', '-hide_banner', '-v', 'error', '-i', url, '-map', '0:v', '-map', '0:a', '-f', 'null', '-']);
    expect(decoded.stderr).toBe('');
    expect(decoded.code).toBe(0);
  });

  test('a rendition that is not in the master playlist answers 404 PLAYBACK_RENDITION_NOT_FOUND', async () => {
    for (const name of ['audio-1.m3u8', 'audio-7-segment-0.ts', 'subtitles-9.m3u8', 'subtitles-9.vtt', 'subtitles-9-0.vtt', 'media-720p.m3u8', 'segment-360p-0.ts']) {
      const res = await fetch(new URL(name, url));
      expect(res.status).toBe(404);
      expect(((await res.json()) as { code: string }).code).toBe('PLAYBACK_RENDITION_NOT_FOUND');
    }
  });
});

describe('H.264 with AC-3 audio', () => {
  test('the source variant copies the video and makes only the audio AAC, and says so in CODECS', async () => {
    const url = (await openPlayback(p, token, dolby)).url;
    const master = await (await fetch(url)).text();
    const source = ffprobeJson(join(root.root, 'Movies/Dolby (2001).mkv')).streams.find((s: any) => s.codec_type === 'video');
    const inf = attrs(master.split('\n').find((l) => l.startsWith('#EXT-X-STREAM-INF:'))!);
    expect(inf.CODECS).toMatch(/^avc1\.[0-9A-F]{6},mp4a\.40\.2$/);
    const seg = await fetch(new URL('segment-0.ts', url));
    expect(seg.status).toBe(200);
    const streams = (await probeBytes(await seg.arrayBuffer())).streams as { codec_type: string; codec_name: string; profile?: string; channels?: number }[];
    // The fixture is x264 ultrafast (Constrained Baseline); a transcode would be High.
    expect(streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', profile: source.profile });
    expect(source.profile).not.toBe('High');
    expect(streams.find((s) => s.codec_type === 'audio')).toMatchObject({ codec_name: 'aac', channels: 2 });
  });
});

describe('the ladder', () => {
  let url: string;
  let variants: { attrs: Record<string, string>; uri: string }[];
  beforeAll(async () => {
    url = (await openPlayback(p, token, ladder.id)).url;
    const lines = (await (await fetch(url)).text()).split('\n');
    variants = lines.flatMap((l, i) => (l.startsWith('#EXT-X-STREAM-INF:') ? [{ attrs: attrs(l), uri: lines[i + 1]! }] : []));
  });

  test('the master playlist lists the source then the rungs below it, each with CODECS, RESOLUTION and BANDWIDTH', () => {
    expect(variants.map((v) => [v.uri, v.attrs.RESOLUTION])).toEqual([
      ['media.m3u8', '1280x720'],
      ['media-480p.m3u8', '854x480'],
      ['media-360p.m3u8', '640x360'],
    ]);
    const source = ffprobeJson(join(root.root, 'Movies/Ladder (2020).mp4')).streams.find((s: any) => s.codec_type === 'video');
    expect(source.profile).toBe('High');
    expect(variants[0]!.attrs.CODECS).toBe(`avc1.6400${source.level.toString(16).toUpperCase()},mp4a.40.2`);
    for (const v of variants.slice(1)) expect(v.attrs.CODECS).toBe('avc1.640028,mp4a.40.2');
    for (const v of variants) expect(Number(v.attrs.BANDWIDTH)).toBeGreaterThan(0);
    expect(Number(variants[1]!.attrs.BANDWIDTH)).toBeGreaterThan(Number(variants[2]!.attrs.BANDWIDTH));
  });

  test('ffmpeg reads each rendition as an HLS client: the source copied, the rungs H.264 at their height', { timeout: 120_000 }, async () => {
    for (const v of variants) {
      const playlistUrl = new URL(v.uri, url).toString();
      const decoded = await run(['ffmpeg', '-hide_banner', '-v', 'error', '-i', playlistUrl, '-f', 'null', '-']);
      expect(decoded.stderr).toBe('');
      expect(decoded.code).toBe(0);
      const media = await (await fetch(playlistUrl)).text();
      const first = media.split('\n').find((l) => l.endsWith('.ts'))!;
      const seg = await fetch(new URL(first, playlistUrl));
      const streams = (await probeBytes(await seg.arrayBuffer())).streams as { codec_type: string; codec_name: string; height?: number }[];
      const video = streams.find((s) => s.codec_type === 'video')!;
      expect(video.codec_name).toBe('h264');
      expect(`${video.height}`).toBe(v.attrs.RESOLUTION!.split('x')[1]!);
      expect(streams.some((s) => s.codec_type === 'audio' && s.codec_name === 'aac')).toBe(true);
    }
  });

  test('every rendition is cut at the same indexed keyframes and each of its segments starts on a keyframe', { timeout: 120_000 }, async () => {
    const cuts: number[][] = [];
    for (const v of variants) {
      const playlistUrl = new URL(v.uri, url);
      const lines = (await (await fetch(playlistUrl)).text()).split('\n');
      const durations = lines.filter((l) => l.startsWith('#EXTINF:')).map((l) => Math.round(Number(l.slice(8).split(',')[0]) * 1000));
      const bounds = durations.reduce<number[]>((acc, d) => [...acc, acc[acc.length - 1]! + d], [0]);
      cuts.push(bounds);
      for (const b of bounds.slice(1, -1)) expect(ladder.keyframesMs).toContain(b);
      const names = lines.filter((l) => l.endsWith('.ts'));
      for (const [i, name] of names.entries()) {
        const packets = (await probeBytes(await (await fetch(new URL(name, playlistUrl))).arrayBuffer(), ['-select_streams', 'v:0', '-show_packets'])).packets as { pts_time: string; flags: string }[];
        const first = packets.reduce((m, x) => (Number(x.pts_time) < Number(m.pts_time) ? x : m));
        expect(first.flags).toContain('K');
        expect(Math.abs(Number(first.pts_time) - 10 - bounds[i]! / 1000)).toBeLessThan(0.1);
      }
    }
    expect(cuts[0]!.length).toBeGreaterThanOrEqual(3); // at least two segments, so there is a cut to share
    for (const c of cuts) expect(c).toEqual(cuts[0]!);
  });
});
