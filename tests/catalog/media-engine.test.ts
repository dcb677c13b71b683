// The media engine's parts on real files: fastHash past 4 GiB, the Matroska EBML walk (nested
// SeekHeads) on a buffer built here, container keyframe indexes against a packet scan and against
// `ffprobe -show_packets`, and the bounds on ffprobe (timeout kill, concurrency cap, config).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { appendFileSync, copyFileSync, mkdtempSync, openSync, closeSync, writeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/platform/config';
import { headersOf, meaningOf } from '../../src/platform/errors';
import { catalogErrorTable } from '../../src/services/catalog/catalog.errors';
import { loadCatalogConfig } from '../../src/services/catalog/catalog.config';
import { fastHash } from '../../src/services/catalog/media-engine/fast-hash';
import { createFfprobe, parsePacketCsv } from '../../src/services/catalog/media-engine/ffprobe';
import { bufferSource } from '../../src/services/catalog/media-engine/file-reader';
import { createProbeAnswerer } from '../../src/services/catalog/media-engine/probe.answerer';
import { containerIndexKeyframes, keyframes } from '../../src/services/catalog/media-engine/keyframes';
import { ID, locateElements, matroskaCueKeyframes } from '../../src/services/catalog/media-engine/matroska-cues';
import { mp4SyncKeyframes } from '../../src/services/catalog/media-engine/mp4-index';
import { ffprobeKeyframesMs, mediaFixtures, type MediaFixtures } from '../helpers/media';

let dir: string;
let fx: MediaFixtures;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-engine-'));
  fx = mediaFixtures();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The hash written out again in the most literal way, to check the engine against. */
function referenceHash(bytes: Buffer, size: bigint, tailStart: number): string {
  let sum = size;
  for (let i = 0; i + 8 <= Math.min(65536, bytes.length); i += 8) sum += bytes.readBigUInt64LE(i);
  for (let i = tailStart; i + 8 <= bytes.length; i += 8) sum += bytes.readBigUInt64LE(i);
  return BigInt.asUintN(64, sum).toString(16).padStart(16, '0');
}

describe('fastHash (OpenSubtitles hash)', () => {
  test('a sparse 5 GiB file hashes with 64-bit wrapping arithmetic', async () => {
    const file = join(dir, 'big.bin');
    Bun.spawnSync(['truncate', '-s', '5G', file]);
    const fd = openSync(file, 'r+');
    // First word all ones, last word 1: their sum is exactly 2^64, which must wrap to 0.
    writeSync(fd, Buffer.alloc(8, 0xff), 0, 8, 0);
    const one = Buffer.alloc(8);
    one.writeBigUInt64LE(1n);
    writeSync(fd, one, 0, 8, 5 * 2 ** 30 - 8);
    closeSync(fd);
    const { hash, sizeBytes } = await fastHash(file);
    expect(sizeBytes).toBe(5 * 2 ** 30);
    // size = 5 * 2^30 = 0x140000000; it does not fit 32 bits, and the words wrapped to 0.
    expect(hash).toBe('0000000140000000');
    rmSync(file);
  });

  test('the hash of a media file matches a literal reading of the algorithm', async () => {
    const bytes = Buffer.from(await Bun.file(fx.mkv).arrayBuffer());
    const { hash } = await fastHash(fx.mkv);
    const tailStart = bytes.length - 65536;
    // The fixture is over 64 KiB and a multiple-of-8 tail start keeps the reference simple.
    expect(bytes.length).toBeGreaterThan(65536);
    const aligned = Buffer.concat([bytes.subarray(0, 65536), bytes.subarray(tailStart)]);
    expect(hash).toBe(referenceHash(aligned, BigInt(bytes.length), 65536));
  });

  test('the hash is stable and changes with the size', async () => {
    const file = join(dir, 'grow.mkv');
    copyFileSync(fx.mkv, file);
    const first = await fastHash(file);
    expect((await fastHash(file)).hash).toBe(first.hash);
    appendFileSync(file, Buffer.alloc(1));
    const grown = await fastHash(file);
    expect(grown.sizeBytes).toBe(first.sizeBytes + 1);
    expect(grown.hash).not.toBe(first.hash);
  });
});

describe('files that stopped being regular files', () => {
  // The path is checked before it is read; a FIFO swapped in between must not block the engine.
  test('fastHash refuses a FIFO and the container index reader passes it on to the packet scan, neither waiting for a writer', async () => {
    const fifo = join(dir, 'swapped.mkv');
    Bun.spawnSync(['mkfifo', fifo]);
    const outcome = (p: Promise<unknown>) =>
      Promise.race([p.then((v) => ({ read: v }), () => 'refused'), Bun.sleep(2000).then(() => 'blocked')]);
    expect(await outcome(fastHash(fifo))).toBe('refused');
    expect(await outcome(containerIndexKeyframes(fifo, 'mkv'))).toEqual({ read: null });
    rmSync(fifo);
  });
});

// ---- an MP4 sample table built byte by byte -------------------------------------------------

const ascii = (text: string) => [...Buffer.from(text, 'latin1')];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const box = (type: string, body: number[]) => [...u32(8 + body.length), ...ascii(type), ...body];
/** ftyp, then a moov with one video track at timescale 1000 whose stts has a single entry. */
function mp4WithStts(count: number, delta: number): Uint8Array {
  const timescale = [...u32(0), ...u32(0), ...u32(0), ...u32(1000), ...u32(0)];
  const stts = box('stts', [...u32(0), ...u32(1), ...u32(count), ...u32(delta)]);
  const mdia = box('mdia', [
    ...box('mdhd', [...timescale, ...u32(0)]),
    ...box('hdlr', [...u32(0), ...u32(0), ...ascii('vide'), ...new Array(13).fill(0)]),
    ...box('minf', box('stbl', stts)),
  ]);
  const moov = box('moov', [...box('mvhd', [...timescale, ...new Array(80).fill(0)]), ...box('trak', mdia)]);
  return new Uint8Array([...box('ftyp', ascii('isom')), ...moov]);
}

describe('MP4 sample tables', () => {
  test('every sample of a table without stss is a keyframe, placed by stts', async () => {
    expect(await mp4SyncKeyframes(bufferSource(mp4WithStts(3, 1000)))).toEqual([0, 1000, 2000]);
  });

  test('a table claiming four billion samples is left to the packet scan, not allocated', async () => {
    expect(await mp4SyncKeyframes(bufferSource(mp4WithStts(0xffffffff, 1)))).toBeNull();
  });
});

// ---- a Matroska file built byte by byte ------------------------------------------------------

const idBytes = (id: number) => {
  const out: number[] = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) out.unshift(v % 256);
  return out;
};
const size8 = (n: number) => [0x01, 0, 0, 0, ...[24, 16, 8, 0].map((s) => (n >>> s) & 0xff)];
const uint = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const el = (id: number, body: number[]) => [...idBytes(id), ...size8(body.length), ...body];
const seek = (target: number, pos: number) => el(ID.Seek, [...el(ID.SeekID, idBytes(target)), ...el(ID.SeekPosition, uint(pos))]);
const cue = (time: number, track: number) => el(ID.CuePoint, [...el(ID.CueTime, uint(time)), ...el(ID.CueTrackPositions, el(ID.CueTrack, [track]))]);

/**
 * EBML header, then a Segment whose first SeekHead only points to a second SeekHead at the end,
 * which names Info, Tracks and Cues. A Cluster of unknown size sits before the Cues, so a plain
 * top-level walk cannot reach them: only following the SeekHead chain can.
 */
function craftedMatroska(opts: { loop?: boolean } = {}): Uint8Array {
  const ebml = el(ID.EBML, el(0x4282, [...Buffer.from('matroska')]));
  const info = el(ID.Info, el(ID.TimecodeScale, uint(100_000))); // 0.1 ms ticks
  const tracks = el(ID.Tracks, [...el(ID.TrackEntry, [...el(ID.TrackNumber, [1]), ...el(ID.TrackType, [2])]), ...el(ID.TrackEntry, [...el(ID.TrackNumber, [2]), ...el(ID.TrackType, [1])])]);
  const cues = el(ID.Cues, [...cue(0, 2), ...cue(5_000, 1), ...cue(20_000, 2), ...cue(40_000, 2)]);
  const seekHead1Len = el(ID.SeekHead, seek(ID.SeekHead, 0)).length;
  const infoAt = seekHead1Len;
  const tracksAt = infoAt + info.length;
  // An unknown-size Cluster: a linear walk must stop here.
  const cluster = [...idBytes(ID.Cluster), 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xa3, 0x81, 0x00];
  const cuesAt = tracksAt + tracks.length + cluster.length;
  const seekHead2At = cuesAt + cues.length;
  const seekHead1 = el(ID.SeekHead, seek(ID.SeekHead, seekHead2At));
  const seekHead2 = el(ID.SeekHead, [...seek(ID.Info, infoAt), ...seek(ID.Tracks, tracksAt), ...seek(ID.Cues, cuesAt), ...(opts.loop ? seek(ID.SeekHead, 0) : [])]);
  const segmentBody = [...seekHead1, ...info, ...tracks, ...cluster, ...cues, ...seekHead2];
  return new Uint8Array([...ebml, ...idBytes(ID.Segment), ...size8(segmentBody.length), ...segmentBody]);
}

describe('Matroska Cues', () => {
  test('a SeekHead that points to another SeekHead is followed to the Cues', async () => {
    const src = bufferSource(craftedMatroska());
    const layout = await locateElements(src);
    expect(layout!.seekHeadsVisited).toBe(2);
    expect(layout!.positions.Cues).toBeDefined();
    // Video is track 2; the audio cue point is not a video keyframe; ticks are 0.1 ms.
    expect(await matroskaCueKeyframes(src)).toEqual([0, 2000, 4000]);
  });

  test('SeekHeads that point at each other do not loop', async () => {
    const src = bufferSource(craftedMatroska({ loop: true }));
    expect(await matroskaCueKeyframes(src)).toEqual([0, 2000, 4000]);
    expect((await locateElements(src))!.seekHeadsVisited).toBe(2);
  });

  test('bytes that are not EBML give no index rather than an error', async () => {
    expect(await matroskaCueKeyframes(bufferSource(new Uint8Array(64).fill(7)))).toBeNull();
    expect(await matroskaCueKeyframes(bufferSource(craftedMatroska().slice(0, 60)))).toBeNull();
  });
});

describe('keyframes from container indexes', () => {
  const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 2, probeSizeBytes: 5_000_000, analyzeDurationUs: 5_000_000, timeoutMs: 20_000 });

  test('MKV Cues and MP4 sync samples equal the K packets of ffprobe -show_packets and of the packet scan', async () => {
    for (const [file, container, source] of [
      [fx.mkv, 'mkv', 'cues'],
      [fx.mkvSubs, 'mkv', 'cues'],
      [fx.mp4, 'mp4', 'mp4-index'],
      [fx.mp4Subs, 'mp4', 'mp4-index'],
    ] as const) {
      const fromIndex = await containerIndexKeyframes(file, container);
      expect(fromIndex!.source).toBe(source);
      expect(fromIndex!.ms).toEqual(ffprobeKeyframesMs(file));
      expect(await ffprobe.keyframePacketScan(file)).toEqual(fromIndex!.ms);
    }
  });

  test('a streamed MKV, written to a pipe and so without Cues, falls back to the packet scan', async () => {
    const streamed = join(dir, 'streamed.mkv');
    const out = Bun.file(streamed);
    const proc = Bun.spawn(['ffmpeg', '-loglevel', 'error', '-i', fx.mkv, '-c', 'copy', '-f', 'matroska', 'pipe:1'], { stdout: 'pipe' });
    await Bun.write(out, new Response(proc.stdout));
    await proc.exited;
    expect(await containerIndexKeyframes(streamed, 'mkv')).toBeNull();
    const kf = await keyframes(streamed, 'mkv', 24, ffprobe);
    expect(kf.source).toBe('packet-scan');
    expect(kf.ms).toEqual(ffprobeKeyframesMs(streamed));
  });

  test('a container without an index falls back: MPEG-TS has no index to read', async () => {
    const ts = join(dir, 'clip.ts');
    Bun.spawnSync(['ffmpeg', '-loglevel', 'error', '-y', '-i', fx.mp4, '-c', 'copy', '-f', 'mpegts', ts]);
    expect(await containerIndexKeyframes(ts, 'mpegts')).toBeNull();
    expect(await ffprobe.keyframePacketScan(ts)).toEqual(ffprobeKeyframesMs(ts));
  });

  test('the packet scan keeps K packets, uses dts when pts is N/A and skips packets with neither', () => {
    expect(parsePacketCsv('0.000000,-0.083,K_\nN/A,0.5,K_\nN/A,N/A,K_\n1.0,0.9,__\n2.000000,N/A,K_D\n\n')).toEqual([0, 500, 2000]);
  });

  test('packets without any timestamp are placed by their position when the frame rate is known', () => {
    expect(parsePacketCsv('N/A,N/A,K_\nN/A,N/A,__\nN/A,N/A,__\nN/A,N/A,__\nN/A,N/A,K_\n', 2)).toEqual([0, 2000]);
  });

  test('a raw H.264 stream, whose packets have neither pts nor dts, still gets its keyframes', async () => {
    const raw = join(dir, 'clip.h264');
    Bun.spawnSync(['ffmpeg', '-loglevel', 'error', '-y', '-i', fx.mp4, '-an', '-c:v', 'copy', '-bsf:v', 'h264_mp4toannexb', '-f', 'h264', raw]);
    const kf = await keyframes(raw, 'h264', 24, ffprobe);
    expect(kf.source).toBe('packet-scan');
    // The same stream in its MP4 has its keyframes at these times.
    expect(kf.ms).toEqual(ffprobeKeyframesMs(fx.mp4));
  });
});

describe('bounds on ffprobe', () => {
  test('a probe that outlives APP_PROBE_TIMEOUT_MS is killed and answers timeout', async () => {
    // A FIFO without a writer: ffprobe blocks on it forever unless killed.
    const fifo = join(dir, 'stuck.fifo');
    Bun.spawnSync(['mkfifo', fifo]);
    const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 1, probeSizeBytes: 5_000_000, analyzeDurationUs: 5_000_000, timeoutMs: 300 });
    const res = await ffprobe.formatAndStreams(fifo);
    expect(res).toEqual({ ok: false, reason: 'probe timed out' });
    const left = Bun.spawnSync(['pgrep', '-f', fifo]);
    expect(left.stdout.toString().trim()).toBe('');
  });

  test('a probe timeout is a retryable 504 problem, not a verdict that the file is no medium', async () => {
    const root = mkdtempSync(join(tmpdir(), 'keel-timeout-root-'));
    copyFileSync(fx.mkv, join(root, 'film.mkv'));
    const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 1, probeSizeBytes: 5_000_000, analyzeDurationUs: 5_000_000, timeoutMs: 1 });
    // native: false, since the native reader answers this MKV without starting ffprobe at all.
    const err = await createProbeAnswerer({ mediaRoots: [root], ffprobe, native: false }).probe({ root: 0, path: 'film.mkv' }).then(() => null, (e) => e);
    expect(err).toMatchObject({ code: 'MEDIA_PROBE_TIMEOUT' });
    expect(meaningOf(err, catalogErrorTable)).toMatchObject({ status: 504, retryable: true, category: 'transient' });
    rmSync(root, { recursive: true, force: true });
  });

  test('no more ffprobe processes run at once than APP_PROBE_CONCURRENCY', async () => {
    const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 2, probeSizeBytes: 5_000_000, analyzeDurationUs: 5_000_000, timeoutMs: 20_000 });
    let most = 0;
    const timer = setInterval(() => (most = Math.max(most, ffprobe.active)), 1);
    const all = await Promise.all([fx.mp4, fx.mkv, fx.mp4Subs, fx.mkvSubs, fx.audioOnly, fx.mp4].map((f) => ffprobe.formatAndStreams(f)));
    clearInterval(timer);
    expect(all.every((r) => r.ok)).toBe(true);
    expect(most).toBe(2);
  });

  test('past APP_PROBE_CONCURRENCY + APP_PROBE_QUEUE a probe is refused at once with a retryable 503', async () => {
    // FIFOs without a writer: each probe holds its process until the timeout.
    const fifos = [1, 2].map((i) => join(dir, `busy-${i}.fifo`));
    for (const f of fifos) Bun.spawnSync(['mkfifo', f]);
    const ffprobe = createFfprobe({ binary: 'ffprobe', concurrency: 1, maxWaiting: 1, probeSizeBytes: 5_000_000, analyzeDurationUs: 5_000_000, timeoutMs: 1_500 });
    await ffprobe.formatAndStreams(fx.mp4); // the demuxer list is read once, before any place is taken
    const held = fifos.map((f) => ffprobe.formatAndStreams(f));
    await Bun.sleep(50);
    const err = await ffprobe.formatAndStreams(fx.mkv).then(() => null, (e) => e);
    expect(err).toMatchObject({ code: 'MEDIA_ENGINE_BUSY' });
    const busy = meaningOf(err, catalogErrorTable);
    expect(busy).toMatchObject({ status: 503, retryable: true });
    expect(headersOf(err, busy)).toMatchObject({ 'retry-after': '5' });
    expect(await Promise.all(held)).toEqual([{ ok: false, reason: 'probe timed out' }, { ok: false, reason: 'probe timed out' }]);
    // Places are back once the held probes ended.
    expect((await ffprobe.formatAndStreams(fx.mkv)).ok).toBe(true);
  });

  test('probe settings are parsed once and a bad value names its variable', () => {
    expect(loadCatalogConfig({})).toMatchObject({ probeConcurrency: 2, probeSizeBytes: 10_000_000, probeAnalyzeUs: 10_000_000, probeTimeoutMs: 30_000 });
    for (const [name, value] of [['APP_PROBE_CONCURRENCY', '0'], ['APP_PROBE_SIZE', 'lots'], ['APP_PROBE_ANALYZE_US', '-1'], ['APP_PROBE_TIMEOUT_MS', '5']]) {
      expect(() => loadCatalogConfig({ [name!]: value })).toThrow(ConfigError);
      expect(() => loadCatalogConfig({ [name!]: value })).toThrow(`${name}:`);
    }
  });
});
