// What the index needs from an MP4/MOV/M4A or Matroska/WebM file, read from the container's own
// headers (moov; EBML Info, Tracks, Tags) without starting ffprobe. The answer has the shape of
// `ffprobe -show_format -show_streams -of json` restricted to the fields the media engine uses, with
// the values ffprobe 5.x gives for them, so everything downstream of the probe is the same code.
// The reader is strict: anything it cannot answer exactly as ffprobe would (a codec it does not know,
// a fragmented or truncated file, an attached cover, tags ffmpeg would rename, HE-AAC that only a
// decoder can tell) answers null, and the caller asks ffprobe. tests/catalog/native-probe.test.ts
// holds the two side by side. The readers: mp4-header.ts, matroska-header.ts, codec-config.ts (what they share: native-unsure.ts).
import type { ByteSource } from './file-reader';
import type { FfprobeJson } from './ffprobe';
import { probeMatroska } from './matroska-header';
import { probeMp4 } from './mp4-header';
import { Unsure } from './native-unsure';

export const NOT_MP4_OR_MATROSKA = 'neither MP4 nor Matroska';

/** The container's answer, or null when ffprobe must be asked. */
export async function nativeProbe(src: ByteSource): Promise<FfprobeJson | null> {
  return (await nativeProbeWhy(src)).json;
}

/** The answer, or why there is none (tests and logs say which rule sent a file to ffprobe). */
export async function nativeProbeWhy(src: ByteSource): Promise<{ json: FfprobeJson; why?: undefined } | { json: null; why: string }> {
  try {
    const head = await src.read(0, 12);
    if (head.length >= 12 && String.fromCharCode(...head.subarray(4, 8)) === 'ftyp') return { json: await probeMp4(src) };
    if (head.length >= 4 && head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return { json: await probeMatroska(src) };
    return { json: null, why: NOT_MP4_OR_MATROSKA };
  } catch (e) {
    if (e instanceof Unsure) return { json: null, why: e.message };
    if (e instanceof RangeError) return { json: null, why: 'a structure past its end' };
    throw e;
  }
}
