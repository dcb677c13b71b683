// Codec configurations as ffmpeg's decoders read them, for the native header readers: the H.264
// SPS (VUI included) and PPS head with the values by which the decoder refuses them, the HEVC record
// and SPS picture size, the AAC AudioSpecificConfig, an AC-3 sync frame. What they cannot tell
// exactly as ffprobe would is "unsure".
import { unsure } from './native-unsure';

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
export function avcProfile(avcC: Uint8Array, width: number, height: number): { profile: string; level: number } {
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
export function hevcProfile(hvcC: Uint8Array, width: number, height: number): { profile: string; level: number } {
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
export function aacConfig(asc: Uint8Array): { channels: number; sampleRate: number } {
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

const AC3_RATES = [48000, 44100, 32000];
const AC3_KBPS = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640];
const AC3_CHANNELS = [2, 1, 2, 3, 3, 4, 4, 5];

/** An AC-3 (not E-AC-3) sync frame's header: what ffmpeg's parser and decoder report for the stream. */
export function ac3Frame(b: Uint8Array): { channels: number; sampleRate: number; bitRate: number } {
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

/**
 * An AAC frame must start, after any fill or data elements (ffmpeg's encoder puts its name in one),
 * with the element its channel configuration starts with (a channel pair for stereo, else a single
 * channel), instance 0: ffprobe decodes that frame, and bytes that are no such frame (a chunk offset
 * pointing elsewhere) can make it report other channels.
 */
export function checkAacFrameStart(frame: Uint8Array, channels: number) {
  let pos = 0;
  const u = (n: number) => {
    let v = 0;
    for (let i = 0; i < n; i++, pos++) {
      const byte = frame[pos >> 3] ?? unsure('first AAC frame too short');
      v = v * 2 + ((byte >> (7 - (pos & 7))) & 1);
    }
    return v;
  };
  for (let n = 0; n < 8; n++) {
    const element = u(3);
    if (element === 6) {
      // FIL: a 4-bit count, 15 escaping to 14 + an 8-bit count; then that many bytes.
      let count = u(4);
      if (count === 15) count += u(8) - 1;
      pos += count * 8;
      continue;
    }
    if (element === 4) {
      // DSE: instance, byte-align flag, 8-bit count (255 adds another 8-bit count), then the bytes.
      u(4);
      const align = u(1);
      let count = u(8);
      if (count === 255) count += u(8);
      if (align) pos = (pos + 7) & ~7;
      pos += count * 8;
      continue;
    }
    if (element !== (channels === 2 ? 1 : 0) || u(4) !== 0) unsure('first AAC frame');
    return;
  }
  unsure('first AAC frame');
}
