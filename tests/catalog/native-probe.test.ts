// The native reader of POST /scan against ffprobe. For files made here with `ffmpeg -f lavfi` (H.264
// and HEVC, AAC, several audio and subtitle tracks, faststart and not, fragmented, cut short, damaged,
// other containers and codecs), the media engine's whole answer (container, duration, bit rates,
// streams, languages, dimensions, profiles, frame rates, capabilities, keyframes, tags) must be the
// same with the native reader as with ffprobe alone; the files it cannot answer exactly go to ffprobe.
// Then byte mutations of the headers: the reader never throws, and what it answers is ffprobe's answer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFfprobe } from '../../src/services/catalog/media-engine/ffprobe';
import { bufferSource, openByteSource } from '../../src/services/catalog/media-engine/file-reader';
import { laceHeaderLength } from '../../src/services/catalog/media-engine/matroska-header';
import { nativeProbeWhy } from '../../src/services/catalog/media-engine/native-probe';
import { createProbeAnswerer } from '../../src/services/catalog/media-engine/probe.answerer';
import { mediaFixtures } from '../helpers/media';

let dir: string;
const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 2, probeSizeBytes: 10_000_000, analyzeDurationUs: 10_000_000, timeoutMs: 30_000 });

function ffmpeg(args: string[]) {
  const res = Bun.spawnSync(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', ...args], { stdout: 'pipe', stderr: 'pipe' });
  if (res.exitCode !== 0) throw new Error(`ffmpeg failed: ${res.stderr.toString().slice(0, 500)}`);
}

const video = (seconds: number, rate = '24', size = '160x120') => ['-f', 'lavfi', '-i', `testsrc=size=${size}:rate=${rate}:duration=${seconds}`];
const sine = (seconds: number, hz = 48000, freq = 440) => ['-f', 'lavfi', '-i', `sine=frequency=${freq}:sample_rate=${hz}:duration=${seconds}`];
const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '24', '-bf', '2', '-pix_fmt', 'yuv420p'];

/** Every file, whether the native reader must answer it, and how it is made. */
const CASES: { name: string; native: boolean; make: (out: string) => void }[] = [
  { name: 'h264-aac-faststart.mp4', native: true, make: (o) => ffmpeg([...video(2), ...sine(2), ...x264, '-c:a', 'aac', '-b:a', '96k', '-movflags', '+faststart', o]) },
  { name: 'h264-aac-moov-last.mp4', native: true, make: (o) => ffmpeg([...video(2, '25'), ...sine(2, 44100), ...x264, '-profile:v', 'high', '-c:a', 'aac', '-metadata:s:a:0', 'language=fra', o]) },
  { name: 'baseline-ntsc.mp4', native: true, make: (o) => ffmpeg([...video(2, '30000/1001', '176x144'), ...x264, '-profile:v', 'baseline', '-bf', '0', o]) },
  {
    name: 'two-audio-subs.mp4',
    native: true,
    make: (o) => {
      const srt = join(dir, 'in.srt');
      writeFileSync(srt, '1\n00:00:00,500 --> 00:00:01,500\nHello\n');
      ffmpeg([...video(2), ...sine(2), ...sine(2, 32000, 300), '-i', srt, '-map', '0', '-map', '1', '-map', '2', '-map', '3', ...x264,
        '-c:a:0', 'aac', '-ac:a:0', '2', '-c:a:1', 'aac', '-ac:a:1', '6', '-c:s', 'mov_text',
        '-metadata:s:a:0', 'language=eng', '-metadata:s:a:1', 'language=deu', '-metadata:s:s:0', 'language=spa', o]);
    },
  },
  { name: 'hevc.mp4', native: true, make: (o) => ffmpeg([...video(1, '24', '128x96'), ...sine(1), '-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error', '-pix_fmt', 'yuv420p', '-tag:v', 'hvc1', '-c:a', 'aac', o]) },
  { name: 'audio.m4a', native: true, make: (o) => ffmpeg([...sine(2, 44100), '-c:a', 'aac', o]) },
  {
    name: 'several-tracks.mkv',
    native: true,
    make: (o) => {
      const srt = join(dir, 'in.srt');
      const ass = join(dir, 'in.ass');
      writeFileSync(srt, '1\n00:00:00,500 --> 00:00:01,500\nHello\n');
      writeFileSync(ass, readFileSync(join(mediaFixtures().mkv, '..', 'subs.ass')));
      ffmpeg([...video(2), ...sine(2), ...sine(2, 44100, 300), ...sine(2, 32000, 200), '-i', srt, '-i', ass, '-i', srt,
        '-map', '0', '-map', '1', '-map', '2', '-map', '3', '-map', '4', '-map', '5', '-map', '6', ...x264,
        '-c:a:0', 'aac', '-ac:a:0', '2', '-c:a:1', 'aac', '-ac:a:1', '6', '-c:a:2', 'aac', '-ac:a:2', '1', '-c:s:0', 'srt', '-c:s:1', 'ass', '-c:s:2', 'srt',
        '-metadata:s:a:0', 'language=eng', '-metadata:s:a:1', 'language=fre', '-metadata:s:a:2', 'language=und',
        '-metadata:s:s:0', 'language=eng', '-metadata:s:s:1', 'language=ger', '-disposition:a:1', 'default', '-disposition:s:1', 'default',
        '-metadata', 'title=A Title Of Its Own', o]);
    },
  },
  // 4:4:4 from the RGB test pattern: the Rext profile.
  { name: 'hevc-rext.mkv', native: true, make: (o) => ffmpeg([...video(1, '25', '128x96'), ...sine(1), '-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error', '-c:a', 'aac', o]) },
  // AC-3: channels, rate and bit rate from the first frame of each track.
  { name: 'ac3-audio.mkv', native: true, make: (o) => ffmpeg([...video(1), ...sine(1), ...x264, '-c:a', 'ac3', o]) },
  {
    name: 'ac3-several.mkv',
    native: true,
    make: (o) => ffmpeg([...video(1), ...sine(1), ...sine(1, 44100, 300), ...sine(1, 32000, 200), '-map', '0', '-map', '1', '-map', '2', '-map', '3', ...x264,
      '-c:a:0', 'aac', '-c:a:1', 'ac3', '-ac:a:1', '6', '-b:a:1', '448k', '-c:a:2', 'ac3', '-ac:a:2', '2', '-b:a:2', '96k',
      '-metadata:s:a:1', 'language=spa', '-disposition:a:0', '0', '-disposition:a:1', 'default', o]),
  },
  { name: 'audio-only.mka', native: true, make: (o) => ffmpeg([...sine(2), '-c:a', 'aac', '-f', 'matroska', o]) },
  // What the native reader leaves to ffprobe.
  { name: 'fragmented.mp4', native: false, make: (o) => ffmpeg([...video(2), ...sine(2), ...x264, '-c:a', 'aac', '-movflags', 'frag_keyframe+empty_moov', o]) },
  { name: 'ac3.mp4', native: true, make: (o) => ffmpeg([...video(1), ...sine(1), ...x264, '-c:a', 'ac3', '-ac', '6', o]) },
  { name: 'eac3.mp4', native: false, make: (o) => ffmpeg([...video(1), ...sine(1), ...x264, '-c:a', 'eac3', o]) },
  { name: 'low-rate-aac.m4a', native: false, make: (o) => ffmpeg([...sine(2, 22050), '-c:a', 'aac', o]) },
  { name: 'tagged.mp4', native: false, make: (o) => ffmpeg([...video(1), ...x264, '-metadata', 'title=Tagged', '-metadata', 'genre=Drama', '-metadata', 'date=1999', o]) },
  { name: 'quicktime.mov', native: false, make: (o) => ffmpeg([...video(1), ...sine(1), ...x264, '-c:a', 'aac', '-f', 'mov', o]) },
  { name: 'eac3-audio.mkv', native: false, make: (o) => ffmpeg([...video(1), ...sine(1), ...x264, '-c:a', 'eac3', o]) },
  { name: 'tagged.mkv', native: true, make: (o) => ffmpeg([...video(1), ...x264, '-metadata', 'title=Tagged', '-metadata', 'genre=Drama; Crime', '-metadata', 'DATE_RELEASED=1999-03-31', '-metadata', 'comment=What it is about', o]) },
  {
    name: 'cover.mkv',
    native: false,
    make: (o) => {
      const jpg = join(dir, 'cover.jpg');
      ffmpeg(['-f', 'lavfi', '-i', 'color=c=red:size=32x32:duration=1', '-frames:v', '1', jpg]);
      ffmpeg([...video(1), ...x264, '-attach', jpg, '-metadata:s:t', 'mimetype=image/jpeg', '-metadata:s:t', 'filename=cover.jpg', o]);
    },
  },
  {
    name: 'streamed.mkv', // written to a pipe: unknown sizes, no duration, no Cues
    native: false,
    make: (o) => {
      const res = Bun.spawnSync(['ffmpeg', '-hide_banner', '-loglevel', 'error', ...video(1), ...sine(1), ...x264, '-c:a', 'aac', '-f', 'matroska', 'pipe:1'], { stdout: 'pipe' });
      writeFileSync(o, res.stdout);
    },
  },
  { name: 'vp8-opus.webm', native: false, make: (o) => ffmpeg([...video(1, '24', '64x48'), ...sine(1), '-c:v', 'libvpx', '-deadline', 'realtime', '-c:a', 'libopus', o]) },
  { name: 'transport.ts', native: false, make: (o) => ffmpeg([...video(1), ...sine(1), ...x264, '-c:a', 'aac', '-f', 'mpegts', o]) },
  { name: 'cut-in-half.mp4', native: false, make: (o) => writeFileSync(o, half(join(dir, 'h264-aac-faststart.mp4'))) },
  { name: 'cut-in-half.mkv', native: false, make: (o) => writeFileSync(o, half(join(dir, 'several-tracks.mkv'))) },
  {
    name: 'zeroed-head.mkv',
    native: false,
    make: (o) => {
      const b = Buffer.from(readFileSync(join(dir, 'hevc-rext.mkv')));
      b.fill(0, 0, 4096);
      writeFileSync(o, b);
    },
  },
  {
    name: 'bcp47-only.mkv', // a track whose only language element is LanguageBCP47 (its id patched)
    native: false,
    make: (o) => {
      const b = Buffer.from(readFileSync(join(dir, 'several-tracks.mkv')));
      const at = b.indexOf(Buffer.from('22b59c83667265', 'hex')); // Language "fre"
      b[at + 2] = 0x9d;
      writeFileSync(o, b);
    },
  },
  {
    name: 'shifted-audio-chunk.mp4', // the audio's first chunk offset moved into its frame: no AAC frame starts there
    native: false,
    make: (o) => {
      const b = Buffer.from(readFileSync(join(dir, 'h264-aac-faststart.mp4')));
      const stco = b.indexOf('stco', b.indexOf('soun'));
      b.writeUInt32BE(b.readUInt32BE(stco + 12) + 30, stco + 12);
      writeFileSync(o, b);
    },
  },
  {
    name: 'bad-box-size.mp4', // a trak's size points past its moov
    native: false,
    make: (o) => {
      const b = Buffer.from(readFileSync(join(dir, 'h264-aac-faststart.mp4')));
      const trak = b.indexOf('trak');
      b.writeUInt32BE(0x7fffffff, trak - 4);
      writeFileSync(o, b);
    },
  },
  { name: 'noise.mp4', native: false, make: (o) => writeFileSync(o, Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypisom'), crypto.getRandomValues(new Uint8Array(4000))])) },
];

function half(file: string): Buffer {
  const b = readFileSync(file);
  return b.subarray(0, Math.floor(b.length / 2));
}

let withNative: ReturnType<typeof createProbeAnswerer>;
let ffprobeOnly: ReturnType<typeof createProbeAnswerer>;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-native-probe-'));
  for (const c of CASES) c.make(join(dir, c.name));
  withNative = createProbeAnswerer({ mediaRoots: [dir], ffprobe });
  ffprobeOnly = createProbeAnswerer({ mediaRoots: [dir], ffprobe, native: false });
});
afterAll(() => process.env.KEEP_NP ? undefined : rmSync(dir, { recursive: true, force: true }));

async function why(file: string) {
  const src = await openByteSource(file);
  try {
    return await nativeProbeWhy(src);
  } finally {
    await src.close();
  }
}

describe('the native reader answers what ffprobe answers', () => {
  for (const c of CASES) {
    test(`${c.name}: ${c.native ? 'read natively' : 'left to ffprobe'}, the same answer`, async () => {
      const verdict = await why(join(dir, c.name));
      // Which way the file went, with the reader's reason when it declined.
      expect({ native: verdict.json !== null, why: verdict.why }).toMatchObject({ native: c.native });
      const [a, b] = await Promise.all([withNative.probe({ root: 0, path: c.name }), ffprobeOnly.probe({ root: 0, path: c.name })]);
      expect(a).toEqual(b);
    });
  }

  test('the native answers carry what the cases were made with', async () => {
    const multi = await withNative.probe({ root: 0, path: 'several-tracks.mkv' });
    if (!multi.medium) throw new Error('several-tracks.mkv is a medium');
    expect(multi.facts.streams.map((s) => [s.type, s.codec, s.language, s.defaultFlag, s.channels ?? null])).toEqual([
      ['video', 'h264', 'und', false, null],
      ['audio', 'aac', 'eng', false, 2],
      ['audio', 'aac', 'fre', true, 6],
      ['audio', 'aac', 'und', false, 1],
      ['subtitle', 'subrip', 'eng', false, null],
      ['subtitle', 'ass', 'ger', true, null],
      ['subtitle', 'subrip', 'und', false, null],
    ]);
    expect(multi.tags?.title).toBe('A Title Of Its Own');
    expect(multi.facts.capabilities).toContain('multi-audio');
    const hevc = await withNative.probe({ root: 0, path: 'hevc.mp4' });
    if (!hevc.medium) throw new Error('hevc.mp4 is a medium');
    expect(hevc.facts.streams[0]).toMatchObject({ codec: 'hevc', width: 128, height: 96, profile: 'Main', frameRate: 24 });
    const tagged = await withNative.probe({ root: 0, path: 'tagged.mkv' });
    expect(tagged.medium && tagged.tags).toEqual({ title: 'Tagged', genres: ['Drama', 'Crime'], year: 1999, overview: 'What it is about' });
    const ac3 = await withNative.probe({ root: 0, path: 'ac3-several.mkv' });
    if (!ac3.medium) throw new Error('ac3-several.mkv is a medium');
    expect(ac3.facts.streams.slice(1).map((s) => [s.codec, s.channels, s.sampleRate, s.bitRateBps, s.defaultFlag])).toEqual([
      ['aac', 1, 48000, null, false],
      ['ac3', 6, 44100, 448000, true],
      ['ac3', 2, 32000, 96000, false],
    ]);
    const ntsc = await withNative.probe({ root: 0, path: 'baseline-ntsc.mp4' });
    if (!ntsc.medium) throw new Error('baseline-ntsc.mp4 is a medium');
    expect(ntsc.facts.streams[0]).toMatchObject({ profile: 'Constrained Baseline', frameRate: 29.97, width: 176, height: 144 });
  });

  test('a file the reader declines is logged at debug with the rule, never the path', async () => {
    const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log = {
      child: () => log,
      debug: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields }),
      info: () => {},
      warn: () => {},
      error: () => {},
    };
    const logged = createProbeAnswerer({ mediaRoots: [dir], ffprobe, log });
    await logged.probe({ root: 0, path: 'h264-aac-faststart.mp4' });
    await logged.probe({ root: 0, path: 'transport.ts' }); // not MP4 or Matroska: nothing to say
    expect(lines).toEqual([]);
    await logged.probe({ root: 0, path: 'fragmented.mp4' });
    expect(lines).toEqual([{ msg: 'media probe: native reader unsure, ffprobe asked', fields: { why: 'fragmented' } }]);
  });

  test('the shared fixtures the other catalog tests scan are read natively and agree', async () => {
    const fx = mediaFixtures();
    for (const file of [fx.mp4, fx.mp4Subs, fx.mkv, fx.mkvSubs, fx.audioOnly]) {
      const name = `fixture-${file.split('/').pop()}`;
      copyFileSync(file, join(dir, name));
      expect((await why(join(dir, name))).json).not.toBeNull();
      expect(await withNative.probe({ root: 0, path: name })).toEqual(await ffprobeOnly.probe({ root: 0, path: name }));
    }
  });
});

describe('laced Matroska blocks (mkvmerge laces audio; ffmpeg does not)', () => {
  test('the first frame starts after the lace header: Xiph, fixed-size and EBML lacing', async () => {
    // Three frames of 300, 10 and the rest: Xiph sizes 255+45 and 10; EBML sizes 300 (2 bytes) and a 1-byte signed delta.
    const xiph = bufferSource(Uint8Array.from([2, 255, 45, 10, 0x0b, 0x77]));
    const fixed = bufferSource(Uint8Array.from([2, 0x0b, 0x77]));
    const ebml = bufferSource(Uint8Array.from([2, 0x41, 0x2c, 0xdc, 0x0b, 0x77])); // 0x412c: 300; 0xdc: a 1-byte signed delta
    expect(await laceHeaderLength(xiph, 0, 1)).toBe(4);
    expect(await laceHeaderLength(fixed, 0, 2)).toBe(1);
    expect(await laceHeaderLength(ebml, 0, 3)).toBe(4);
    expect(await laceHeaderLength(bufferSource(Uint8Array.from([0x0b, 0x77])), 0, 0)).toBe(0);
  });
});

describe('damaged headers', () => {
  /** A small deterministic generator, so a failing mutant can be found again. */
  function prng(seed: number) {
    return () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
  }

  for (const base of ['h264-aac-faststart.mp4', 'several-tracks.mkv']) {
    test(`${base} with bytes changed in its headers: never a throw, and any native answer is ffprobe's`, async () => {
      const bytes = readFileSync(join(dir, base));
      const rand = prng(base.length * 7919);
      // The headers: before the first Cluster, or before the mdat of a faststart MP4.
      const headerEnd = base.endsWith('.mkv') ? bytes.indexOf(Buffer.from([0x1f, 0x43, 0xb6, 0x75])) : bytes.indexOf('mdat') - 4;
      expect(headerEnd).toBeGreaterThan(100);
      let native = 0;
      for (let i = 0; i < 40; i++) {
        const mutant = Buffer.from(bytes);
        const changes = 1 + Math.floor(rand() * 3);
        for (let k = 0; k < changes; k++) mutant[Math.floor(rand() * headerEnd)] = Math.floor(rand() * 256);
        const verdict = await nativeProbeWhy(bufferSource(mutant));
        if (verdict.json === null) continue;
        native++;
        const name = `mutant-${i}-${base}`;
        writeFileSync(join(dir, name), mutant);
        const [a, b] = await Promise.all([withNative.probe({ root: 0, path: name }), ffprobeOnly.probe({ root: 0, path: name })]);
        expect({ mutant: i, answer: a }).toEqual({ mutant: i, answer: b });
      }
      // Some mutants touch bytes nobody reads (the mdat of a faststart file is past the headers, but
      // padding and names are not): the comparison above ran on some of them.
      expect(native).toBeGreaterThan(0);
    });
  }
});
