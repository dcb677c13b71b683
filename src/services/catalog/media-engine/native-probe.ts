// What the index needs from an MP4/MOV/M4A or Matroska/WebM file, read from the container's own
// headers (moov; EBML Info, Tracks, Tags) without starting ffprobe. The answer has the shape of
// `ffprobe -show_format -show_streams -of json` restricted to the fields the media engine uses, with
// the values ffprobe 5.x gives for them, so everything downstream of the probe is the same code.
// The reader is strict: anything it cannot answer exactly as ffprobe would (a codec it does not know,
// a fragmented or truncated file, an attached cover, tags beyond the encoder's, HE-AAC that only a
// decoder can tell) answers null, and the caller asks ffprobe. tests/catalog/native-probe.test.ts
// holds the two side by side.
import type { ByteSource } from './file-reader';
import type { FfprobeJson, FfprobeStreamJson } from './ffprobe';
import { readVint } from './matroska-cues';

/** Unsure: the caller asks ffprobe. */
class Unsure extends Error {}
const unsure = (why: string): never => {
  throw new Unsure(why);
};

const MAX_HEADER_BYTES = 64 * 1024 * 1024; // a moov, Tracks or Tags larger than this is left to ffprobe
const AV_TIME_BASE = 1_000_000;

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
    return { json: null, why: 'neither MP4 nor Matroska' };
  } catch (e) {
    if (e instanceof Unsure) return { json: null, why: e.message };
    if (e instanceof RangeError) return { json: null, why: 'a structure past its end' };
    throw e;
  }
}

// ---------------------------------------------------------------- shared

/** ffprobe's `format.duration` ("%f" of microseconds) and `format.bit_rate` from the file size. */
function formatTimes(durationUs: number, size: number) {
  if (!(durationUs > 0)) unsure('no duration');
  return {
    duration: (durationUs / AV_TIME_BASE).toFixed(6),
    bit_rate: String(Math.trunc((size * 8 * AV_TIME_BASE) / durationUs)),
  };
}

/** av_rescale(a, b, c): a * b / c rounded to nearest, halves away from zero. */
function rescale(a: number, b: number, c: number): number {
  const n = BigInt(Math.round(a)) * BigInt(Math.round(b));
  const d = BigInt(Math.round(c));
  return Number((n + d / 2n) / d);
}

const H264_PROFILES: Record<number, [string, string?]> = {
  66: ['Baseline', 'Constrained Baseline'], // the second when constraint_set1
  77: ['Main'],
  88: ['Extended'],
  100: ['High'],
  110: ['High 10', 'High 10 Intra'], // the second when constraint_set3
  122: ['High 4:2:2', 'High 4:2:2 Intra'],
  244: ['High 4:4:4 Predictive', 'High 4:4:4 Intra'],
};

/** Bits of a NAL unit's payload, emulation prevention bytes removed; reading past the end is unsure. */
class Bits {
  private pos = 0;
  private readonly bytes: number[] = [];
  constructor(nal: Uint8Array) {
    for (let i = 0; i < nal.length; i++) {
      if (i >= 2 && nal[i] === 3 && nal[i - 1] === 0 && nal[i - 2] === 0) continue;
      this.bytes.push(nal[i]!);
    }
  }
  /** Bits left before the RBSP trailing bits (the last 1 bit and the zeros after it). */
  left(): number {
    let end = this.bytes.length * 8;
    while (end > 0 && !((this.bytes[(end - 1) >> 3]! >> (7 - ((end - 1) & 7))) & 1)) end--;
    return Math.max(0, end - 1 - this.pos);
  }
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++, this.pos++) {
      const byte = this.bytes[this.pos >> 3] ?? unsure('SPS shorter than its fields');
      v = v * 2 + ((byte >> (7 - (this.pos & 7))) & 1);
    }
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.u(1) === 0) if (++zeros > 31) unsure('SPS exp-Golomb code');
    return 2 ** zeros - 1 + this.u(zeros);
  }
  se(): number {
    const k = this.ue();
    return k & 1 ? (k + 1) / 2 : -k / 2;
  }
}

const HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135, 144]);

/**
 * The picture size an H.264 SPS gives, with the checks by which ffmpeg's decoder refuses one
 * (a refused SPS leaves ffprobe without a profile, a level or the decoder's size).
 */
function spsSize(sps: Uint8Array): { width: number; height: number; id: number } {
  const b = new Bits(sps.subarray(1));
  const profileIdc = b.u(8);
  b.u(16); // constraint flags, level
  const id = b.ue();
  if (id >= 32) unsure('SPS id');
  let chroma = 1;
  if (HIGH_PROFILES.has(profileIdc)) {
    chroma = b.ue();
    if (chroma > 3) unsure('chroma_format_idc');
    if (chroma === 3 && b.u(1)) unsure('separate colour planes');
    const luma = b.ue() + 8;
    const chromaDepth = b.ue() + 8;
    if (luma !== chromaDepth || luma > 14) unsure('bit depth');
    b.u(1); // transform bypass
    if (b.u(1)) {
      for (let i = 0; i < (chroma === 3 ? 12 : 8); i++) {
        if (!b.u(1)) continue;
        let last = 8;
        let next = 8;
        for (let j = 0; j < (i < 6 ? 16 : 64); j++) {
          if (next !== 0) next = (last + b.se() + 256) % 256;
          last = next === 0 ? last : next;
        }
      }
    }
  }
  if (b.ue() > 12) unsure('log2_max_frame_num');
  const poc = b.ue();
  if (poc === 0) {
    if (b.ue() > 12) unsure('log2_max_poc_lsb');
  } else if (poc === 1) {
    b.u(1);
    b.se();
    b.se();
    const cycle = b.ue();
    if (cycle >= 256) unsure('poc cycle');
    for (let i = 0; i < cycle; i++) b.se();
  } else if (poc !== 2) unsure('poc type');
  if (b.ue() > 16) unsure('ref frames');
  b.u(1);
  const mbWidth = b.ue() + 1;
  let mbHeight = b.ue() + 1;
  const frameMbsOnly = b.u(1);
  if (!frameMbsOnly) b.u(1);
  mbHeight *= 2 - frameMbsOnly;
  b.u(1);
  let [left, right, top, bottom] = [0, 0, 0, 0];
  if (b.u(1)) [left, right, top, bottom] = [b.ue(), b.ue(), b.ue(), b.ue()];
  const stepX = chroma === 1 || chroma === 2 ? 2 : 1;
  const stepY = (2 - frameMbsOnly) * (chroma === 1 ? 2 : 1);
  const width = 16 * mbWidth - (left + right) * stepX;
  const height = 16 * mbHeight - (top + bottom) * stepY;
  if (width <= 0 || height <= 0 || (left + right) * stepX >= 16 * mbWidth || (top + bottom) * stepY >= 16 * mbHeight) unsure('cropping');
  if (b.u(1)) vui(b);
  return { width, height, id };
}

/** The VUI, for the values with which ffmpeg refuses an SPS; reading past its end is unsure too. */
function vui(b: Bits) {
  if (b.u(1)) {
    const aspect = b.u(8);
    if (aspect === 255) b.u(32);
    else if (aspect > 16) unsure('VUI aspect ratio');
  }
  if (b.u(1)) b.u(1); // overscan
  if (b.u(1)) {
    b.u(4); // video format, full range
    if (b.u(1)) b.u(24); // colour description
  }
  if (b.u(1)) [b.ue(), b.ue()]; // chroma location
  if (b.u(1)) {
    const units = b.u(32);
    const scale = b.u(32);
    if (!units || !scale) unsure('VUI timing');
    b.u(1);
  }
  const hrd = () => {
    const count = b.ue() + 1;
    if (count > 32) unsure('HRD cpb count');
    b.u(8);
    for (let i = 0; i < count; i++) [b.ue(), b.ue(), b.u(1)];
    b.u(20);
  };
  const nal = b.u(1);
  if (nal) hrd();
  const vcl = b.u(1);
  if (vcl) hrd();
  if (nal || vcl) b.u(1);
  b.u(1); // pic_struct_present
  if (!b.left()) return;
  if (b.u(1)) {
    b.u(1);
    [b.ue(), b.ue(), b.ue(), b.ue()];
    if (b.ue() > 16) unsure('num_reorder_frames');
    b.ue();
  }
}

/** The PPS fields before its optional tail, with the ranges ffmpeg's decoder accepts. */
function checkPps(b: Bits, spsId: number) {
  if (b.ue() >= 256 || b.ue() !== spsId) unsure('PPS ids');
  b.u(2);
  if (b.ue() !== 0) unsure('PPS slice groups');
  if (b.ue() > 31 || b.ue() > 31) unsure('PPS reference counts');
  b.u(1);
  if (b.u(2) === 3) unsure('PPS weighted bipred');
  const qp = b.se();
  const qs = b.se();
  const chromaOffset = b.se();
  if (qp < -26 || qp > 25 || qs < -26 || qs > 25 || chromaOffset < -12 || chromaOffset > 12) unsure('PPS quantiser');
  b.u(3);
}

/** Profile name and level of an avcC record, as ffmpeg's H.264 decoder reports them from the SPS. */
function avcProfile(avcC: Uint8Array, width: number, height: number): { profile: string; level: number } {
  // One SPS, then PPSs, then nothing but the High profiles' 4-byte extension (or its absence), with
  // 4-byte NAL lengths: the avcC every common muxer writes. Anything else is ffprobe's to judge.
  if (avcC.length < 8 || avcC[0] !== 1 || (avcC[4]! & 3) !== 3 || (avcC[5]! & 0x1f) !== 1) unsure('avcC');
  const spsLen = (avcC[6]! << 8) | avcC[7]!;
  if (spsLen < 4 || 8 + spsLen + 1 > avcC.length) unsure('avcC SPS');
  const sps = avcC.subarray(8, 8 + spsLen);
  if ((sps[0]! & 0x1f) !== 7) unsure('not an SPS');
  let p = 8 + spsLen;
  const numPps = avcC[p++]!;
  if (numPps < 1) unsure('avcC without PPS');
  const size = spsSize(sps);
  for (let i = 0; i < numPps; i++) {
    if (p + 2 > avcC.length) unsure('avcC PPS');
    const len = (avcC[p]! << 8) | avcC[p + 1]!;
    p += 2;
    if (len < 2 || p + len > avcC.length || (avcC[p]! & 0x1f) !== 8) unsure('avcC PPS');
    checkPps(new Bits(avcC.subarray(p + 1, p + len)), size.id);
    p += len;
  }
  if (p !== avcC.length && !(HIGH_PROFILES.has(sps[1]!) && p + 4 === avcC.length)) unsure('avcC trailing bytes');
  const [idc, flags, level] = [sps[1]!, sps[2]!, sps[3]!];
  // The container's size must be the decoder's: ffprobe reports the latter.
  if (size.width !== width || size.height !== height) unsure('container and SPS sizes differ');
  const names = H264_PROFILES[idc] ?? unsure('H.264 profile');
  let profile = names[0];
  if (idc === 66 && flags & 0x40) profile = names[1]!;
  if ((idc === 110 || idc === 122 || idc === 244) && flags & 0x10) profile = names[1]!;
  return { profile, level };
}

const HEVC_PROFILES: Record<number, string> = { 1: 'Main', 2: 'Main 10', 3: 'Main Still Picture', 4: 'Rext' };

/**
 * Profile and level of an hvcC record. The record must be whole (VPS, SPS and PPS arrays that fill
 * it exactly, 4-byte NAL lengths) and its SPS must give the container's picture size.
 */
function hevcProfile(hvcC: Uint8Array, width: number, height: number): { profile: string; level: number } {
  if (hvcC.length < 23 || hvcC[0] !== 1 || (hvcC[21]! & 3) !== 3) unsure('hvcC');
  const profile = HEVC_PROFILES[hvcC[1]! & 0x1f] ?? unsure('HEVC profile');
  if (hvcC[1]! >> 6 !== 0) unsure('HEVC profile space');
  const arrays = hvcC[22]!;
  let p = 23;
  const seen = new Set<number>();
  let sps: Uint8Array | undefined;
  for (let i = 0; i < arrays; i++) {
    if (p + 3 > hvcC.length) unsure('hvcC array');
    const type = hvcC[p]! & 0x3f;
    const count = (hvcC[p + 1]! << 8) | hvcC[p + 2]!;
    p += 3;
    if (seen.has(type) || count === 0) unsure('hvcC arrays');
    seen.add(type);
    for (let k = 0; k < count; k++) {
      if (p + 2 > hvcC.length) unsure('hvcC NAL');
      const len = (hvcC[p]! << 8) | hvcC[p + 1]!;
      p += 2;
      if (len < 3 || p + len > hvcC.length || ((hvcC[p]! >> 1) & 0x3f) !== type) unsure('hvcC NAL');
      if (type === 33 && k === 0) sps = hvcC.subarray(p, p + len);
      p += len;
    }
  }
  if (p !== hvcC.length || !seen.has(32) || !sps || !seen.has(34) || [...seen].some((t) => t < 32 || t > 40)) unsure('hvcC arrays');
  const size = hevcSpsSize(sps!);
  if (size.width !== width || size.height !== height) unsure('container and SPS sizes differ');
  return { profile, level: hvcC[12]! };
}

/** The picture size an HEVC SPS gives (conformance window applied). */
function hevcSpsSize(sps: Uint8Array): { width: number; height: number } {
  const b = new Bits(sps.subarray(2));
  b.u(4);
  const subLayers = b.u(3);
  b.u(1);
  b.u(88 + 8); // general profile, tier, flags and level
  const profilePresent: number[] = [];
  const levelPresent: number[] = [];
  for (let i = 0; i < subLayers; i++) {
    profilePresent.push(b.u(1));
    levelPresent.push(b.u(1));
  }
  if (subLayers > 0) for (let i = subLayers; i < 8; i++) b.u(2);
  for (let i = 0; i < subLayers; i++) {
    if (profilePresent[i]) b.u(88);
    if (levelPresent[i]) b.u(8);
  }
  if (b.ue() > 15) unsure('HEVC SPS id');
  const chroma = b.ue();
  if (chroma > 3) unsure('HEVC chroma format');
  if (chroma === 3 && b.u(1)) unsure('separate colour planes');
  let width = b.ue();
  let height = b.ue();
  if (b.u(1)) {
    const subW = chroma === 1 || chroma === 2 ? 2 : 1;
    const subH = chroma === 1 ? 2 : 1;
    const [l, r, t, bt] = [b.ue(), b.ue(), b.ue(), b.ue()];
    width -= (l + r) * subW;
    height -= (t + bt) * subH;
  }
  const luma = b.ue() + 8;
  const chromaDepth = b.ue() + 8;
  if (width <= 0 || height <= 0 || luma > 16 || (chroma !== 0 && luma !== chromaDepth)) unsure('HEVC SPS');
  return { width, height };
}

const AAC_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];
const AAC_CHANNELS = [0, 1, 2, 3, 4, 5, 6, 8];

/**
 * Channels and rate of an AudioSpecificConfig. Only AAC-LC above 24 kHz with a standard channel
 * configuration: below that an implicit SBR layer (HE-AAC) doubles the rate, which only decoding
 * a frame tells, and ffprobe does decode one.
 */
function aacConfig(asc: Uint8Array): { channels: number; sampleRate: number } {
  if (asc.length < 2 || (asc[1]! & 7) !== 0) unsure('AudioSpecificConfig with GASpecificConfig flags');
  // After the two bytes, only the explicit "no SBR" signalling ffmpeg's encoder writes
  // (sync extension 0x2b7, object type 5, sbrPresentFlag 0) and zero padding: any other
  // extension may signal SBR or PS, which change the rate and the channels.
  if (asc.length > 2) {
    let bits = 0n;
    for (const b of asc.subarray(2)) bits = (bits << 8n) | BigInt(b);
    const total = BigInt((asc.length - 2) * 8);
    const take = (n: bigint, at: bigint) => (total < at + n ? -1n : (bits >> (total - at - n)) & ((1n << n) - 1n));
    if (take(11n, 0n) !== 0x2b7n || take(5n, 11n) !== 5n || take(1n, 16n) !== 0n) unsure('AudioSpecificConfig extension');
    if (total > 17n && (bits & ((1n << (total - 17n)) - 1n)) !== 0n) unsure('AudioSpecificConfig past the extension');
  }
  const aot = asc[0]! >> 3;
  const freqIndex = ((asc[0]! & 7) << 1) | (asc[1]! >> 7);
  const chanConfig = (asc[1]! >> 3) & 0xf;
  if (aot !== 2) unsure('AAC object type');
  const sampleRate = AAC_RATES[freqIndex] ?? unsure('AAC rate');
  if (sampleRate <= 24000) unsure('AAC rate that may carry SBR');
  if (chanConfig < 1 || chanConfig > 7) unsure('AAC channel configuration');
  return { channels: AAC_CHANNELS[chanConfig]!, sampleRate };
}

// ---------------------------------------------------------------- MP4

interface Box {
  type: string;
  start: number; // body start
  end: number;
}

class Mp4View {
  readonly view: DataView;
  constructor(readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  }
  *boxes(start: number, end: number): Generator<Box> {
    let p = start;
    while (p + 8 <= end) {
      let size = this.view.getUint32(p);
      const type = String.fromCharCode(...this.buf.subarray(p + 4, p + 8));
      let header = 8;
      if (size === 1) {
        if (p + 16 > end) unsure('box header');
        size = Number(this.view.getBigUint64(p + 8));
        header = 16;
      } else if (size === 0) size = end - p;
      if (size < header || p + size > end) unsure('box size');
      yield { type, start: p + header, end: p + size };
      p += size;
    }
    if (p !== end) unsure('trailing bytes in a box');
  }
  child(parent: Box, type: string): Box | undefined {
    let found: Box | undefined;
    for (const b of this.boxes(parent.start, parent.end)) {
      if (b.type !== type) continue;
      if (found) unsure(`two ${type} boxes`);
      found = b;
    }
    return found;
  }
  path(from: Box, types: string[]): Box | undefined {
    let cur: Box | undefined = from;
    for (const t of types) cur = cur && this.child(cur, t);
    return cur;
  }
  u8 = (p: number) => this.view.getUint8(p);
  u16 = (p: number) => this.view.getUint16(p);
  u32 = (p: number) => this.view.getUint32(p);
  u64 = (p: number) => Number(this.view.getBigUint64(p));
  fourcc = (p: number) => String.fromCharCode(...this.buf.subarray(p, p + 4));
}

/** Top-level boxes: the ftyp body and the moov body (read whole). */
async function readTopLevel(src: ByteSource): Promise<{ ftyp: Uint8Array; moov: Uint8Array }> {
  let p = 0;
  let ftyp: Uint8Array | undefined;
  let moov: Uint8Array | undefined;
  let sawMdat = false;
  for (let n = 0; p < src.size; n++) {
    if (n > 1000 || p + 8 > src.size) unsure('top-level boxes');
    const h = await src.read(p, 16);
    const v = new DataView(h.buffer, h.byteOffset, h.length);
    let size = v.getUint32(0);
    const type = String.fromCharCode(...h.subarray(4, 8));
    let header = 8;
    if (size === 1) {
      size = Number(v.getBigUint64(8));
      header = 16;
    } else if (size === 0) size = src.size - p;
    // A box past the end of the file: a truncated file, which ffprobe judges on its own.
    if (size < header || p + size > src.size) unsure('truncated box');
    if (type === 'ftyp' && !ftyp) ftyp = await src.read(p + header, Math.min(size - header, 4096));
    else if (type === 'moov') {
      if (moov) unsure('two moov boxes');
      if (size > MAX_HEADER_BYTES) unsure('large moov');
      moov = await src.read(p + header, size - header);
    } else if (type === 'moof' || type === 'mfra' || type === 'sidx') unsure('fragmented');
    else if (type === 'mdat') sawMdat = true;
    else if (!['free', 'skip', 'wide', 'uuid', 'ftyp'].includes(type)) unsure(`top-level ${type}`);
    p += size;
  }
  if (!ftyp || !moov || !sawMdat) unsure('no ftyp, moov or mdat');
  return { ftyp: ftyp!, moov: moov! };
}

const MP4_HANDLERS: Record<string, 'video' | 'audio' | 'subtitle'> = { vide: 'video', soun: 'audio', sbtl: 'subtitle', subt: 'subtitle', text: 'subtitle' };

/** mdhd's packed ISO 639-2/T language ('und' included); a Macintosh language code is left to ffprobe. */
function mp4Language(code: number): string {
  if (code < 0x400 || code === 0x7fff) unsure('Macintosh language code');
  return String.fromCharCode(((code >> 10) & 0x1f) + 0x60, ((code >> 5) & 0x1f) + 0x60, (code & 0x1f) + 0x60);
}

/** Descriptors inside esds: the DecoderConfigDescriptor's object type and its DecoderSpecificInfo. */
function esdsConfig(m: Mp4View, box: Box): { objectType: number; asc: Uint8Array } {
  let p = box.start + 4; // version and flags
  const readDescriptor = (): { tag: number; start: number; end: number } => {
    const tag = m.u8(p++);
    let len = 0;
    for (let i = 0; i < 4; i++) {
      const b = m.u8(p++);
      len = (len << 7) | (b & 0x7f);
      if (!(b & 0x80)) break;
    }
    if (p + len > box.end) unsure('esds descriptor');
    return { tag, start: p, end: p + len };
  };
  const es = readDescriptor();
  if (es.tag !== 3) unsure('esds ES_Descriptor');
  const flags = m.u8(es.start + 2);
  p = es.start + 3;
  if (flags & 0x80) p += 2;
  if (flags & 0x40) p += 1 + m.u8(p);
  if (flags & 0x20) p += 2;
  const dc = readDescriptor();
  if (dc.tag !== 4) unsure('esds DecoderConfigDescriptor');
  const objectType = m.u8(dc.start);
  p = dc.start + 13;
  const dsi = readDescriptor();
  if (dsi.tag !== 5) unsure('esds DecoderSpecificInfo');
  return { objectType, asc: m.buf.subarray(dsi.start, dsi.end) };
}

async function probeMp4(src: ByteSource): Promise<FfprobeJson> {
  const { ftyp, moov: body } = await readTopLevel(src);
  const m = new Mp4View(body);
  const root: Box = { type: 'moov', start: 0, end: body.length };

  const majorBrand = String.fromCharCode(...ftyp.subarray(0, 4));
  const formatTags: Record<string, string> = { major_brand: majorBrand };
  let mvhd: Box | undefined;
  const traks: Box[] = [];
  for (const b of m.boxes(root.start, root.end)) {
    if (b.type === 'mvhd') mvhd = b;
    else if (b.type === 'trak') traks.push(b);
    else if (b.type === 'udta') readUdta(m, b, formatTags);
    else if (b.type !== 'free' && b.type !== 'skip' && b.type !== 'iods') unsure(`moov/${b.type}`); // mvex (fragments), meta, cmov...
  }
  if (!mvhd || traks.length === 0) unsure('no mvhd or trak');
  if (m.u8(mvhd!.start) > 1) unsure('mvhd version');
  const v1 = m.u8(mvhd!.start) === 1;
  const movieScale = m.u32(mvhd!.start + (v1 ? 20 : 12));
  const movieDuration = v1 ? m.u64(mvhd!.start + 24) : m.u32(mvhd!.start + 16);
  if (movieScale === 0) unsure('movie timescale');

  let mediaBytes = 0;
  const ac3: [FfprobeStreamJson, number][] = [];
  const streams = traks.map((trak, index) => {
    const s = mp4Stream(m, trak, index, movieScale, src.size);
    mediaBytes += s.dataSize;
    if (s.firstFrameAt !== undefined) ac3.push([s.stream, s.firstFrameAt]);
    return s.stream;
  });
  for (const [s, at] of ac3) {
    const frame = ac3Frame(await src.read(at, 16));
    Object.assign(s, { channels: frame.channels, sample_rate: String(frame.sampleRate), bit_rate: String(frame.bitRate) });
  }
  // The samples must be in the file: a file cut short is judged by ffprobe.
  if (mediaBytes > src.size) unsure('samples past the end of the file');
  const durationUs = rescale(movieDuration, AV_TIME_BASE, movieScale);
  return {
    format: { format_name: 'mov,mp4,m4a,3gp,3g2,mj2', probe_score: 100, ...formatTimes(durationUs, src.size), size: String(src.size), nb_streams: streams.length, tags: formatTags },
    streams,
  };
}

/** udta/meta/ilst holding only the encoder (what ffmpeg writes); any other tag is left to ffprobe. */
function readUdta(m: Mp4View, udta: Box, tags: Record<string, string>) {
  for (const b of m.boxes(udta.start, udta.end)) {
    if (b.type !== 'meta') unsure(`udta/${b.type}`);
    // meta is a full box: its children start after version and flags.
    for (const c of m.boxes(b.start + 4, b.end)) {
      if (c.type === 'hdlr' || c.type === 'free') continue;
      if (c.type !== 'ilst') unsure(`meta/${c.type}`);
      for (const item of m.boxes(c.start, c.end)) {
        if (item.type !== '\u00a9too') unsure('an ilst tag');
        const data = m.child(item, 'data');
        if (!data || m.u32(data.start) !== 1) unsure('ilst data');
        tags.encoder = new TextDecoder().decode(m.buf.subarray(data!.start + 8, data!.end));
      }
    }
  }
}

function mp4Stream(m: Mp4View, trak: Box, index: number, movieScale: number, fileSize: number): { stream: FfprobeStreamJson; dataSize: number; firstFrameAt?: number } {
  let tkhd: Box | undefined;
  let mdia: Box | undefined;
  let edts: Box | undefined;
  for (const b of m.boxes(trak.start, trak.end)) {
    if (b.type === 'tkhd') tkhd = b;
    else if (b.type === 'mdia') mdia = b;
    else if (b.type === 'edts') edts = b;
    else if (b.type !== 'udta' && b.type !== 'free') unsure(`trak/${b.type}`); // tref (chapters, hints), meta...
  }
  if (!tkhd || !mdia) unsure('trak without tkhd or mdia');
  const enabled = (m.u32(tkhd!.start) & 1) === 1;
  const mdhd = m.child(mdia!, 'mdhd') ?? unsure('mdhd');
  const hdlr = m.child(mdia!, 'hdlr') ?? unsure('hdlr');
  const stbl = m.path(mdia!, ['minf', 'stbl']) ?? unsure('stbl');
  if (m.u8(mdhd.start) > 1 || m.u8(tkhd!.start) > 1) unsure('mdhd or tkhd version');
  const mv1 = m.u8(mdhd.start) === 1;
  const timescale = m.u32(mdhd.start + (mv1 ? 20 : 12));
  const mediaDuration = mv1 ? m.u64(mdhd.start + 24) : m.u32(mdhd.start + 16);
  const language = mp4Language(m.u16(mdhd.start + (mv1 ? 32 : 20)));
  const type = MP4_HANDLERS[m.fourcc(hdlr.start + 8)] ?? unsure('handler');
  if (timescale === 0) unsure('track timescale');

  // Samples: count, total decode duration, total size.
  const stts = m.child(stbl, 'stts') ?? unsure('stts');
  const sttsN = m.u32(stts.start + 4);
  if (8 + sttsN * 8 > stts.end - stts.start) unsure('stts');
  let samples = 0;
  let sttsDuration = 0;
  for (let i = 0; i < sttsN; i++) {
    const count = m.u32(stts.start + 8 + i * 8);
    samples += count;
    sttsDuration += count * m.u32(stts.start + 12 + i * 8);
  }
  const stsz = m.child(stbl, 'stsz') ?? unsure('stsz');
  const fixed = m.u32(stsz.start + 4);
  const stszN = m.u32(stsz.start + 8);
  if (stszN !== samples || samples === 0) unsure('sample counts');
  let dataSize = 0;
  if (fixed) dataSize = fixed * stszN;
  else {
    if (12 + stszN * 4 > stsz.end - stsz.start) unsure('stsz');
    for (let i = 0; i < stszN; i++) dataSize += m.u32(stsz.start + 12 + i * 4);
  }
  const chunks = m.child(stbl, 'stco') ?? m.child(stbl, 'co64') ?? unsure('chunk offsets');
  const co64 = chunks.type === 'co64';
  const nChunks = m.u32(chunks.start + 4);
  if (8 + nChunks * (co64 ? 8 : 4) > chunks.end - chunks.start || nChunks === 0) unsure('chunk offsets');
  const sampleSize = (i: number) => (fixed ? fixed : m.u32(stsz.start + 12 + i * 4));
  // The sample-to-chunk table must place every sample, each chunk wholly inside the file: what
  // ffmpeg indexes is then every sample the tables describe (its bit rate and packets depend on it).
  const stsc = m.child(stbl, 'stsc') ?? unsure('stsc');
  const stscN = m.u32(stsc.start + 4);
  if (stscN === 0 || 8 + stscN * 12 > stsc.end - stsc.start) unsure('stsc');
  let sample = 0;
  for (let i = 0; i < stscN; i++) {
    const e = stsc.start + 8 + i * 12;
    const first = m.u32(e);
    const perChunk = m.u32(e + 4);
    const next = i + 1 < stscN ? m.u32(e + 12) : nChunks + 1;
    if ((i === 0 && first !== 1) || next <= first || next > nChunks + 1 || perChunk === 0 || m.u32(e + 8) !== 1) unsure('stsc entry');
    for (let c = first; c < next; c++) {
      let end = co64 ? m.u64(chunks.start + 8 + (c - 1) * 8) : m.u32(chunks.start + 8 + (c - 1) * 4);
      for (let k = 0; k < perChunk; k++) {
        if (sample >= samples) unsure('stsc places more samples than stsz has');
        end += sampleSize(sample++);
      }
      if (end > fileSize) unsure('a chunk past the end of the file');
    }
  }
  if (sample !== samples) unsure('stsc places fewer samples than stsz has');
  const ctts = m.child(stbl, 'ctts');
  if (ctts) {
    const n = m.u32(ctts.start + 4);
    if (8 + n * 8 > ctts.end - ctts.start) unsure('ctts');
    let count = 0;
    for (let i = 0; i < n; i++) count += m.u32(ctts.start + 8 + i * 8);
    if (count !== samples) unsure('ctts sample count');
  }
  const stss = m.child(stbl, 'stss');
  if (stss) {
    const n = m.u32(stss.start + 4);
    if (n === 0 || 8 + n * 4 > stss.end - stss.start) unsure('stss');
    let last = 0;
    for (let i = 0; i < n; i++) {
      const k = m.u32(stss.start + 8 + i * 4);
      if (k <= last || k > samples) unsure('stss entry');
      last = k;
    }
  }

  // A single plain edit at most (ffmpeg rewrites the index for others); the stream's bit rate is
  // taken over the media's own duration, which the sample table must agree with.
  if (edts) {
    const elst = m.child(edts, 'elst') ?? unsure('edts without elst');
    if (m.u8(elst.start) > 1) unsure('elst version');
    const e1 = m.u8(elst.start) === 1;
    if (m.u32(elst.start + 4) !== 1) unsure('edit lists of several entries');
    const mediaTime = e1 ? Number(m.view.getBigInt64(elst.start + 16)) : m.view.getInt32(elst.start + 12);
    if (mediaTime < 0 || m.u32(elst.start + (e1 ? 24 : 16)) !== 0x10000) unsure('an empty or rate-changing edit');
  }
  if (mediaDuration !== sttsDuration) unsure('mdhd and stts durations differ');

  const stsd = m.child(stbl, 'stsd') ?? unsure('stsd');
  if (m.u32(stsd.start + 4) !== 1) unsure('several sample descriptions');
  const entry = [...m.boxes(stsd.start + 8, stsd.end)][0] ?? unsure('sample entry');
  const s: FfprobeStreamJson = {
    index,
    codec_type: type,
    disposition: { default: enabled ? 1 : 0, attached_pic: 0 },
    tags: { language },
  };
  // mov.c: data_size * 8 * time_scale / duration, in integers.
  if (mediaDuration > 0) s.bit_rate = String((BigInt(dataSize) * 8n * BigInt(timescale)) / BigInt(mediaDuration));
  if (type === 'video') {
    const width = m.u16(entry.start + 24);
    const height = m.u16(entry.start + 26);
    const configs = new Map([...m.boxes(entry.start + 78, entry.end)].map((b) => [b.type, b] as const));
    let config: { profile: string; level: number };
    if (entry.type === 'avc1' || entry.type === 'avc3') {
      s.codec_name = 'h264';
      const avcC = configs.get('avcC') ?? unsure('avcC');
      config = avcProfile(m.buf.subarray(avcC.start, avcC.end), width, height);
    } else if (entry.type === 'hvc1' || entry.type === 'hev1') {
      s.codec_name = 'hevc';
      const hvcC = configs.get('hvcC') ?? unsure('hvcC');
      config = hevcProfile(m.buf.subarray(hvcC.start, hvcC.end), width, height);
    } else return unsure('video codec');
    if (!width || !height) unsure('dimensions');
    Object.assign(s, { width, height, profile: config.profile, level: config.level });
    if (sttsDuration > 0) s.avg_frame_rate = `${timescale * samples}/${sttsDuration}`;
  } else if (type === 'audio') {
    if (entry.type !== 'mp4a' && entry.type !== 'ac-3') unsure('audio codec');
    const version = m.u16(entry.start + 8);
    if (version !== 0) unsure('QuickTime sound description');
    if (entry.type === 'ac-3') {
      // What ffprobe reports comes from the first frame (parser and decoder): read it after the tables.
      s.codec_name = 'ac3';
      const firstChunk = co64 ? m.u64(chunks.start + 8) : m.u32(chunks.start + 8);
      return { stream: s, dataSize, firstFrameAt: firstChunk };
    }
    const esds = [...m.boxes(entry.start + 28, entry.end)].find((b) => b.type === 'esds') ?? unsure('esds');
    const { objectType, asc } = esdsConfig(m, esds);
    if (objectType !== 0x40) unsure('mp4a object type');
    const { channels, sampleRate } = aacConfig(asc);
    Object.assign(s, { codec_name: 'aac', channels, sample_rate: String(sampleRate) });
  } else {
    if (entry.type !== 'tx3g') unsure('subtitle codec');
    s.codec_name = 'mov_text';
  }
  return { stream: s, dataSize };
}

// ---------------------------------------------------------------- Matroska

const MKV = {
  EBML: 0x1a45dfa3,
  DocType: 0x4282,
  Segment: 0x18538067,
  SeekHead: 0x114d9b74,
  Seek: 0x4dbb,
  SeekID: 0x53ab,
  SeekPosition: 0x53ac,
  Info: 0x1549a966,
  TimecodeScale: 0x2ad7b1,
  Duration: 0x4489,
  Title: 0x7ba9,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  TrackNumber: 0xd7,
  TrackUID: 0x73c5,
  TrackType: 0x83,
  FlagDefault: 0x88,
  FlagEnabled: 0xb9,
  DefaultDuration: 0x23e383,
  Language: 0x22b59c,
  LanguageBCP47: 0x22b59d,
  CodecID: 0x86,
  CodecPrivate: 0x63a2,
  ContentEncodings: 0x6d80,
  Video: 0xe0,
  PixelWidth: 0xb0,
  PixelHeight: 0xba,
  Audio: 0xe1,
  SamplingFrequency: 0xb5,
  Channels: 0x9f,
  Tags: 0x1254c367,
  Tag: 0x7373,
  Targets: 0x63c0,
  TagTrackUID: 0x63c5,
  SimpleTag: 0x67c8,
  TagName: 0x45a3,
  TagString: 0x4487,
  TagLanguage: 0x447a,
  TagDefault: 0x4484,
  Cluster: 0x1f43b675,
  Cues: 0x1c53bb6b,
  Chapters: 0x1043a770,
  Attachments: 0x1941a469,
  Void: 0xec,
  CRC32: 0xbf,
} as const;

interface El {
  id: number;
  start: number;
  end: number;
}

function header(buf: Uint8Array, p: number): { id: number; size: number; len: number } {
  const id = readVint(buf, p, true);
  if (!id || id.len > 4) return unsure('EBML id');
  const size = readVint(buf, p + id.len, false);
  if (!size) return unsure('EBML size');
  return { id: id.value, size: size.allOnes ? -1 : size.value, len: id.len + size.len };
}

function* elements(buf: Uint8Array, start: number, end: number): Generator<El> {
  let p = start;
  while (p < end) {
    const h = header(buf, p);
    if (h.size < 0 || p + h.len + h.size > end) unsure('element size');
    yield { id: h.id, start: p + h.len, end: p + h.len + h.size };
    p += h.len + h.size;
  }
}

/** Master elements that may sit inside Info, Tracks and Tags (ffmpeg parses into each of them). */
const MASTERS = new Set([
  0xae, 0xe0, 0xe1, 0xe2, 0xe3, 0xe4, 0xe9, 0x55b0, 0x55d0, 0x7670, 0x6d80, 0x6240, 0x5035, 0x7e5b, 0x6624, 0x41e4, 0x6924, // Tracks
  0x7373, 0x63c0, 0x67c8, // Tags
]);

/** Every element of the tree fits inside its parent: a misfit makes ffmpeg give up on the file. */
function checkTree(buf: Uint8Array, start: number, end: number, depth = 0) {
  if (depth > 8) unsure('EBML depth');
  for (const e of elements(buf, start, end)) if (MASTERS.has(e.id)) checkTree(buf, e.start, e.end, depth + 1);
}

const uint = (buf: Uint8Array, e: El) => {
  if (e.end - e.start > 8) unsure('uint size');
  let v = 0;
  for (let i = e.start; i < e.end; i++) v = v * 256 + buf[i]!;
  return v;
};
const float = (buf: Uint8Array, e: El) => {
  const v = new DataView(buf.buffer, buf.byteOffset + e.start, e.end - e.start);
  if (e.end - e.start === 4) return v.getFloat32(0);
  if (e.end - e.start === 8) return v.getFloat64(0);
  return unsure('float size');
};
const text = (buf: Uint8Array, e: El) => new TextDecoder().decode(buf.subarray(e.start, e.end)).replace(/\0+$/, '');

/** Level-1 elements as ffmpeg sees them: those before the first Cluster, then what the SeekHeads name. */
async function level1(src: ByteSource): Promise<{ dataStart: number; found: Map<number, number[]> }> {
  const ebmlHead = await src.read(0, 64);
  const eh = header(ebmlHead, 0);
  if (eh.id !== MKV.EBML || eh.size < 0 || eh.size > 4096) unsure('EBML header');
  const ebml = await src.read(eh.len, eh.size);
  // What ffmpeg refuses: a newer EBML, ids or sizes longer than it reads, a document version past 3.
  const field: Record<number, number> = { 0x42f7: 1, 0x42f2: 4, 0x42f3: 8, 0x4285: 1 };
  let docType = 'matroska';
  for (const e of elements(ebml, 0, ebml.length)) {
    if (e.id === MKV.DocType) docType = text(ebml, e);
    else if (e.id in field) field[e.id] = uint(ebml, e);
  }
  if (docType !== 'matroska' && docType !== 'webm') unsure('DocType');
  if (field[0x42f7]! > 1 || field[0x42f2]! > 4 || field[0x42f3]! > 8 || field[0x4285]! > 3) unsure('EBML versions');
  const segPos = eh.len + eh.size;
  const sh = header(await src.read(segPos, 12), 0);
  if (sh.id !== MKV.Segment) unsure('Segment');
  const dataStart = segPos + sh.len;
  // An unknown-size Segment (a live recording) or one longer than the file (cut short): ffprobe judges.
  if (sh.size < 0 || dataStart + sh.size > src.size) unsure('Segment size');
  const segEnd = dataStart + sh.size;
  const found = new Map<number, number[]>();
  const add = (id: number, pos: number) => {
    const list = found.get(id) ?? [];
    if (!list.includes(pos)) list.push(pos);
    found.set(id, list);
  };
  let p = dataStart;
  let sawCluster = false;
  for (let n = 0; p < segEnd; n++) {
    if (n > 1000) unsure('level-1 elements');
    const h = header(await src.read(p, 12), 0);
    if (h.size < 0 || p + h.len + h.size > segEnd) unsure('level-1 size');
    if (h.id === MKV.Cluster) {
      sawCluster = true;
      found.set(MKV.Cluster, [p]);
      break;
    }
    add(h.id, p);
    p += h.len + h.size;
  }
  if (!sawCluster) unsure('no Cluster');
  const seekHeads = [...(found.get(MKV.SeekHead) ?? [])];
  for (let i = 0; i < seekHeads.length && i < 16; i++) {
    const body = await elementBody(src, seekHeads[i]!, MKV.SeekHead);
    for (const seek of elements(body, 0, body.length)) {
      if (seek.id !== MKV.Seek) continue;
      let id = 0;
      let at = -1;
      for (const f of elements(body, seek.start, seek.end)) {
        if (f.id === MKV.SeekID) id = uint(body, f);
        if (f.id === MKV.SeekPosition) at = dataStart + uint(body, f);
      }
      if (at < dataStart || at >= segEnd) unsure('SeekPosition');
      // ffmpeg parses whatever element sits there: one other than the entry names is left to it.
      if (id !== MKV.Cluster && header(await src.read(at, 12), 0).id !== id) unsure('a SeekHead entry pointing elsewhere');
      if (id === MKV.SeekHead) {
        if (!seekHeads.includes(at)) seekHeads.push(at);
      } else if (id !== MKV.Cluster) add(id, at);
    }
  }
  return { dataStart, found };
}

async function elementBody(src: ByteSource, pos: number, id: number): Promise<Uint8Array> {
  const h = header(await src.read(pos, 12), 0);
  if (h.id !== id || h.size < 0 || h.size > MAX_HEADER_BYTES || pos + h.len + h.size > src.size) unsure('element');
  return src.read(pos + h.len, h.size);
}

const MKV_CODECS: Record<string, { type: 'video' | 'audio' | 'subtitle'; codec: string }> = {
  'V_MPEG4/ISO/AVC': { type: 'video', codec: 'h264' },
  'V_MPEGH/ISO/HEVC': { type: 'video', codec: 'hevc' },
  A_AAC: { type: 'audio', codec: 'aac' },
  A_AC3: { type: 'audio', codec: 'ac3' },
  'S_TEXT/UTF8': { type: 'subtitle', codec: 'subrip' },
  'S_TEXT/ASCII': { type: 'subtitle', codec: 'subrip' },
  'S_TEXT/ASS': { type: 'subtitle', codec: 'ass' },
  'S_TEXT/SSA': { type: 'subtitle', codec: 'ass' },
  'S_TEXT/WEBVTT': { type: 'subtitle', codec: 'webvtt' },
  'S_HDMV/PGS': { type: 'subtitle', codec: 'hdmv_pgs_subtitle' },
  S_VOBSUB: { type: 'subtitle', codec: 'dvd_subtitle' },
  S_DVBSUB: { type: 'subtitle', codec: 'dvb_subtitle' },
};
const MKV_TYPES: Record<number, 'video' | 'audio' | 'subtitle'> = { 1: 'video', 2: 'audio', 17: 'subtitle' };

async function probeMatroska(src: ByteSource): Promise<FfprobeJson> {
  const { found } = await level1(src);
  // Attachments may hold a cover (an attached picture stream for ffprobe); chapters change nothing here
  // but are rare enough to leave alone too.
  if (found.has(MKV.Attachments)) unsure('attachments');
  const one = (id: number) => {
    const list = found.get(id) ?? [];
    if (list.length !== 1) unsure('a level-1 element missing or repeated');
    return list[0]!;
  };

  const info = await elementBody(src, one(MKV.Info), MKV.Info);
  checkTree(info, 0, info.length);
  let scale = 1_000_000;
  let duration = -1;
  const formatTags: Record<string, string> = {};
  for (const e of elements(info, 0, info.length)) {
    if (e.id === MKV.TimecodeScale) scale = uint(info, e);
    if (e.id === MKV.Duration) duration = float(info, e);
    if (e.id === MKV.Title) formatTags.title = text(info, e);
  }
  if (!(duration > 0) || !(scale > 0)) unsure('Info');
  const durationUs = Math.trunc((duration * scale * 1000) / AV_TIME_BASE);

  const tracks = await elementBody(src, one(MKV.Tracks), MKV.Tracks);
  checkTree(tracks, 0, tracks.length);
  const streams: FfprobeStreamJson[] = [];
  const byUid = new Map<number, FfprobeStreamJson>();
  const numbers: number[] = [];
  const videoNumbers = new Set<number>(); // and AC-3 tracks: the tracks whose first block must be found
  const ac3Tracks: FfprobeStreamJson[] = [];
  const trackOf = new Map<FfprobeStreamJson, { number: number; audio?: El }>();
  for (const entry of elements(tracks, 0, tracks.length)) {
    if (entry.id !== MKV.TrackEntry) continue;
    const f = new Map<number, El>();
    for (const e of elements(tracks, entry.start, entry.end)) f.set(e.id, e);
    const get = (id: number) => f.get(id);
    const typeNum = get(MKV.TrackType) ? uint(tracks, get(MKV.TrackType)!) : 0;
    const codecId = get(MKV.CodecID) ? text(tracks, get(MKV.CodecID)!) : '';
    const known = MKV_CODECS[codecId] ?? unsure('codec');
    if (MKV_TYPES[typeNum] !== known.type) unsure('track type');
    // ffprobe 5 reads Language and ignores LanguageBCP47; mkvmerge writes both. A track with only
    // the BCP 47 one is left to ffprobe (newer versions read it, and would differ).
    if ((get(MKV.LanguageBCP47) && !get(MKV.Language)) || get(MKV.ContentEncodings)) unsure('BCP 47 language alone, or content encoding');
    if (get(MKV.FlagEnabled) && uint(tracks, get(MKV.FlagEnabled)!) === 0) unsure('disabled track');
    // Matroska's defaults: English, default flag set. ffmpeg leaves "und" untagged.
    const language = get(MKV.Language) ? text(tracks, get(MKV.Language)!) : 'eng';
    const isDefault = get(MKV.FlagDefault) ? uint(tracks, get(MKV.FlagDefault)!) : 1;
    const s: FfprobeStreamJson = {
      index: streams.length,
      codec_type: known.type,
      codec_name: known.codec,
      disposition: { default: isDefault ? 1 : 0, attached_pic: 0 },
      tags: language === 'und' ? {} : { language },
    };
    const priv = get(MKV.CodecPrivate);
    const privBytes = priv ? tracks.subarray(priv.start, priv.end) : new Uint8Array(0);
    if (known.type === 'video') {
      const video = get(MKV.Video) ?? unsure('Video');
      let width = 0;
      let height = 0;
      for (const e of elements(tracks, video.start, video.end)) {
        if (e.id === MKV.PixelWidth) width = uint(tracks, e);
        if (e.id === MKV.PixelHeight) height = uint(tracks, e);
      }
      if (!width || !height) unsure('dimensions');
      const config = known.codec === 'h264' ? avcProfile(privBytes, width, height) : hevcProfile(privBytes, width, height);
      const dd = get(MKV.DefaultDuration) ? uint(tracks, get(MKV.DefaultDuration)!) : 0;
      if (!dd) unsure('no DefaultDuration'); // ffprobe would estimate a rate from the packets
      Object.assign(s, { width, height, profile: config.profile, level: config.level, avg_frame_rate: `1000000000/${dd}` });
    } else if (known.codec === 'ac3') {
      // Channels, rate and bit rate come from the first frame, read once the blocks are found.
      ac3Tracks.push(s);
    } else if (known.type === 'audio') {
      const { channels, sampleRate } = aacConfig(privBytes);
      // The Audio element must parse and agree with the decoder's configuration (ffprobe reports the decoder's).
      let [elChannels, elRate] = [1, 8000];
      const audio = get(MKV.Audio);
      for (const e of audio ? elements(tracks, audio.start, audio.end) : []) {
        if (e.id === MKV.Channels) elChannels = uint(tracks, e);
        if (e.id === MKV.SamplingFrequency) elRate = float(tracks, e);
      }
      if (elChannels !== channels || elRate !== sampleRate) unsure('Audio element and AudioSpecificConfig differ');
      Object.assign(s, { channels, sample_rate: String(sampleRate) });
    }
    const trackNumber = get(MKV.TrackNumber) ? uint(tracks, get(MKV.TrackNumber)!) : unsure('TrackNumber');
    numbers.push(trackNumber);
    if (known.type === 'video' || known.codec === 'ac3') videoNumbers.add(trackNumber);
    trackOf.set(s, { number: trackNumber, audio: get(MKV.Audio) });
    const uid = get(MKV.TrackUID);
    if (uid) byUid.set(uint(tracks, uid), s);
    streams.push(s);
  }
  if (streams.length === 0) unsure('no tracks');
  if (new Set(numbers).size !== numbers.length) unsure('track numbers repeated');
  // ffprobe's profile and level come from decoding the video: its blocks must be there to decode.
  const firstBlocks = await blocksOf(src, found.get(MKV.Cluster)![0]!, videoNumbers);
  for (const s of ac3Tracks) {
    const { number, audio } = trackOf.get(s)!;
    const frame = ac3Frame(await src.read(firstBlocks.get(number)!, 16));
    let [elChannels, elRate] = [1, 8000];
    for (const e of audio ? elements(tracks, audio.start, audio.end) : []) {
      if (e.id === MKV.Channels) elChannels = uint(tracks, e);
      if (e.id === MKV.SamplingFrequency) elRate = float(tracks, e);
    }
    if (elChannels !== frame.channels || elRate !== frame.sampleRate) unsure('Audio element and AC-3 frame differ');
    Object.assign(s, { channels: frame.channels, sample_rate: String(frame.sampleRate), bit_rate: String(frame.bitRate) });
  }

  for (const pos of found.get(MKV.Tags) ?? []) {
    const tags = await elementBody(src, pos, MKV.Tags);
    checkTree(tags, 0, tags.length);
    readTags(tags, byUid, formatTags);
  }
  for (const s of streams) if (s.tags?.BPS !== undefined && !/^\d+$/.test(s.tags.BPS)) unsure('BPS');
  return {
    format: { format_name: 'matroska,webm', probe_score: 100, ...formatTimes(durationUs, src.size), size: String(src.size), nb_streams: streams.length, tags: formatTags },
    streams,
  };
}

const AC3_RATES = [48000, 44100, 32000];
const AC3_KBPS = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640];
const AC3_CHANNELS = [2, 1, 2, 3, 3, 4, 4, 5];

/** An AC-3 (not E-AC-3) sync frame's header: what ffmpeg's parser and decoder report for the stream. */
function ac3Frame(b: Uint8Array): { channels: number; sampleRate: number; bitRate: number } {
  if (b.length < 8 || b[0] !== 0x0b || b[1] !== 0x77) unsure('no AC-3 sync word');
  const fscod = b[4]! >> 6;
  const frmsizecod = b[4]! & 0x3f;
  const bsid = b[5]! >> 3;
  if (fscod === 3 || frmsizecod >= 38 || bsid > 8) unsure('AC-3 header');
  const bits = new Bits(b.subarray(6));
  const acmod = bits.u(3);
  if (acmod & 1 && acmod !== 1) bits.u(2);
  if (acmod & 4) bits.u(2);
  if (acmod === 2) bits.u(2);
  const lfe = bits.u(1);
  return { channels: AC3_CHANNELS[acmod]! + lfe, sampleRate: AC3_RATES[fscod]!, bitRate: AC3_KBPS[frmsizecod >> 1]! * 1000 };
}

/** Bytes of the lace header at `pos` (none without lacing): Xiph (1), fixed-size (2) or EBML (3). */
export async function laceHeaderLength(src: ByteSource, pos: number, lacing: number): Promise<number> {
  if (lacing === 0) return 0;
  if (lacing === 2) return 1;
  const b = await src.read(pos, 1024);
  const frames = (b[0] ?? unsure('lace count')) + 1;
  let p = 1;
  if (lacing === 1) {
    for (let i = 0; i < frames - 1; i++) {
      while ((b[p] ?? unsure('Xiph lace')) === 255) p++;
      p++;
    }
    return p;
  }
  for (let i = 0; i < frames - 1; i++) {
    const v = readVint(b, p, false) ?? unsure('EBML lace');
    p += v.len;
  }
  return p;
}

/**
 * Walks the first Cluster's blocks (headers only) until every track in `wanted` has one; answers
 * where each one's first frame starts.
 */
async function blocksOf(src: ByteSource, clusterPos: number, wanted: Set<number>): Promise<Map<number, number>> {
  const firsts = new Map<number, number>();
  if (wanted.size === 0) return firsts;
  const left = new Set(wanted);
  const ch = header(await src.read(clusterPos, 12), 0);
  if (ch.size < 0) unsure('Cluster size');
  let p = clusterPos + ch.len;
  const end = Math.min(src.size, p + ch.size);
  for (let n = 0; p < end && n < 2000 && left.size > 0; n++) {
    const head = await src.read(p, 32);
    const h = header(head, 0);
    if (h.size < 0 || p + h.len + h.size > end) unsure('Cluster child');
    let at = h.len;
    if (h.id === 0xa0) {
      // BlockGroup: its Block (0xa1) comes first in what muxers write.
      const b = header(head, at);
      if (b.id !== 0xa1) unsure('BlockGroup without a leading Block');
      at += b.len;
    }
    if (h.id === 0xa3 || h.id === 0xa0) {
      const track = readVint(head, at, false) ?? unsure('block track');
      if (left.has(track.value)) {
        // Track number, timecode (2 bytes), flags; with lacing, the lace header before the first frame.
        const flags = head[at + track.len + 2] ?? unsure('block header');
        firsts.set(track.value, p + at + track.len + 3 + (await laceHeaderLength(src, p + at + track.len + 3, (flags >> 1) & 3)));
        left.delete(track.value);
      }
    }
    p += h.len + h.size;
  }
  if (left.size > 0) unsure('no block of a video or AC-3 track in the first Cluster');
  return firsts;
}

/**
 * Tags of the segment or of a track under their own names, as ffmpeg keeps flat tags without a
 * language; nested tags, tags in a language and other targets (ffmpeg renames or drops them) are left to ffprobe.
 */
function readTags(buf: Uint8Array, byUid: Map<number, FfprobeStreamJson>, formatTags: Record<string, string>) {
  for (const tag of elements(buf, 0, buf.length)) {
    if (tag.id !== MKV.Tag) continue;
    let target: Record<string, string> = formatTags;
    const simple: El[] = [];
    for (const e of elements(buf, tag.start, tag.end)) {
      if (e.id === MKV.SimpleTag) simple.push(e);
      else if (e.id === MKV.Targets) {
        for (const t of elements(buf, e.start, e.end)) {
          if (t.id === MKV.TagTrackUID) {
            const s = byUid.get(uint(buf, t)) ?? unsure('tag of an unknown track');
            target = (s.tags ??= {});
          } else if (t.id !== 0x68ca && t.id !== 0x63ca) unsure('tag target'); // TargetTypeValue, TargetType
        }
      }
    }
    for (const st of simple) {
      let name = '';
      let value: string | undefined;
      for (const e of elements(buf, st.start, st.end)) {
        if (e.id === MKV.TagName) name = text(buf, e);
        else if (e.id === MKV.TagString) value = text(buf, e);
        else if (e.id === MKV.TagLanguage) {
          if (text(buf, e) !== 'und') unsure('tag language');
        } else if (e.id !== MKV.TagDefault) unsure('nested or binary tag');
      }
      if (!name || value === undefined) unsure('tag');
      target[name] = value!;
    }
  }
}
