// The MP4/M4A header reader: ffprobe's answer for the fields the index holds, from the moov box.
import type { ByteSource } from './file-reader';
import type { FfprobeJson, FfprobeStreamJson } from './ffprobe';
import { aacConfig, ac3Frame, avcProfile, checkAacFrameStart, hevcProfile } from './codec-config';
import { AV_TIME_BASE, MAX_HEADER_BYTES, formatTimes, rescale, unsure } from './native-unsure';

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

export async function probeMp4(src: ByteSource): Promise<FfprobeJson> {
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
  const firstFrames: [FfprobeStreamJson, number][] = [];
  const streams = traks.map((trak, index) => {
    const s = mp4Stream(m, trak, index, movieScale, src.size);
    mediaBytes += s.dataSize;
    if (s.firstFrameAt !== undefined) firstFrames.push([s.stream, s.firstFrameAt]);
    return s.stream;
  });
  // Audio whose answer ffprobe takes from decoding the first frame: read (AC-3) or checked (AAC) here.
  for (const [s, at] of firstFrames) {
    const head = await src.read(at, 1024);
    if (s.codec_name === 'aac') {
      checkAacFrameStart(head, s.channels!);
      continue;
    }
    const frame = ac3Frame(head);
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
  // The data is in this file: one self-contained 'url ' reference (ffmpeg refuses a bad dref, and
  // would follow one that names another file).
  const dref = m.path(mdia!, ['minf', 'dinf', 'dref']);
  if (dref) {
    const entry = m.u32(dref.start + 4) === 1 ? [...m.boxes(dref.start + 8, dref.end)][0] : undefined;
    if (!entry || entry.type !== 'url ' || (m.u32(entry.start) & 1) !== 1) unsure('dref');
  }
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
    return { stream: s, dataSize, firstFrameAt: co64 ? m.u64(chunks.start + 8) : m.u32(chunks.start + 8) };
  } else {
    if (entry.type !== 'tx3g') unsure('subtitle codec');
    s.codec_name = 'mov_text';
  }
  return { stream: s, dataSize };
}
