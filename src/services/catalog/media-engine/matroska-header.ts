// The Matroska/WebM header reader: ffprobe's answer for the fields the index holds, from the
// Segment's Info, Tracks and Tags (found as ffmpeg finds them) and the first Cluster's block headers.
import type { ByteSource } from './file-reader';
import type { FfprobeJson, FfprobeStreamJson } from './ffprobe';
import { aacConfig, ac3Frame, avcProfile, checkAacFrameStart, hevcProfile } from './codec-config';
import { ID, readVint } from './matroska-cues';
import { AV_TIME_BASE, MAX_HEADER_BYTES, formatTimes, unsure } from './native-unsure';

const MKV = {
  ...ID,
  DocType: 0x4282,
  Duration: 0x4489,
  Title: 0x7ba9,
  TrackUID: 0x73c5,
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

export async function probeMatroska(src: ByteSource): Promise<FfprobeJson> {
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
    // Tracks whose first block is read (AC-3) or checked (AAC): ffprobe decodes their first frame.
    if (known.type === 'video' || known.codec === 'ac3' || known.codec === 'aac') videoNumbers.add(trackNumber);
    trackOf.set(s, { number: trackNumber, audio: get(MKV.Audio) });
    const uid = get(MKV.TrackUID);
    if (uid) byUid.set(uint(tracks, uid), s);
    streams.push(s);
  }
  if (streams.length === 0) unsure('no tracks');
  if (new Set(numbers).size !== numbers.length) unsure('track numbers repeated');
  // ffprobe's profile and level come from decoding the video: its blocks must be there to decode.
  const firstBlocks = await blocksOf(src, found.get(MKV.Cluster)![0]!, videoNumbers);
  for (const s of streams) {
    if (s.codec_name === 'aac') checkAacFrameStart(await src.read(firstBlocks.get(trackOf.get(s)!.number)!, 1024), s.channels!);
  }
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
  if (left.size > 0) unsure('no block of a video, AAC or AC-3 track in the first Cluster');
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
