// Keyframe positions of a Matroska/WebM file from its Cues, reached through the SeekHead.
// Handles a SeekHead that points to a further SeekHead (Jellyfin's extractor fails there) and
// falls back to walking the top-level elements when no SeekHead names the Cues.
import type { ByteSource } from './file-reader';

export const ID = {
  EBML: 0x1a45dfa3,
  Segment: 0x18538067,
  SeekHead: 0x114d9b74,
  Seek: 0x4dbb,
  SeekID: 0x53ab,
  SeekPosition: 0x53ac,
  Info: 0x1549a966,
  TimecodeScale: 0x2ad7b1,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  TrackNumber: 0xd7,
  TrackType: 0x83,
  Cues: 0x1c53bb6b,
  CuePoint: 0xbb,
  CueTime: 0xb3,
  CueTrackPositions: 0xb7,
  CueTrack: 0xf7,
  Cluster: 0x1f43b675,
} as const;

const UNKNOWN_SIZE = -1;
const MAX_ELEMENT_READ = 64 * 1024 * 1024; // a Cues or Tracks element larger than this is not trusted

interface Header {
  id: number;
  size: number; // UNKNOWN_SIZE when all ones
  headerLen: number;
}

/** Reads an EBML variable-length integer at `p`; `keepMarker` keeps the length bits (element ids). */
export function readVint(buf: Uint8Array, p: number, keepMarker: boolean): { value: number; len: number; allOnes: boolean } | null {
  const first = buf[p];
  if (first === undefined || first === 0) return null;
  let len = 1;
  while (len <= 8 && !(first & (0x80 >> (len - 1)))) len++;
  if (len > 8 || p + len > buf.length) return null;
  let value = keepMarker ? first : first & (0xff >> len);
  let allOnes = value === (0xff >> len);
  for (let i = 1; i < len; i++) {
    value = value * 256 + buf[p + i]!;
    if (buf[p + i] !== 0xff) allOnes = false;
  }
  return { value, len, allOnes };
}

function readHeader(buf: Uint8Array, p: number): Header | null {
  const id = readVint(buf, p, true);
  if (!id || id.len > 4) return null;
  const size = readVint(buf, p + id.len, false);
  if (!size) return null;
  return { id: id.value, size: size.allOnes ? UNKNOWN_SIZE : size.value, headerLen: id.len + size.len };
}

function readUint(buf: Uint8Array, p: number, len: number): number {
  let v = 0;
  for (let i = 0; i < len; i++) v = v * 256 + buf[p + i]!;
  return v;
}

/** Children of a master element held in `buf[start, end)`. */
function* children(buf: Uint8Array, start: number, end: number): Generator<{ id: number; start: number; end: number }> {
  let p = start;
  while (p < end) {
    const h = readHeader(buf, p);
    if (!h || h.size === UNKNOWN_SIZE) return;
    const s = p + h.headerLen;
    const e = s + h.size;
    if (e > end) return;
    yield { id: h.id, start: s, end: e };
    p = e;
  }
}

async function headerAt(src: ByteSource, pos: number): Promise<Header | null> {
  return readHeader(await src.read(pos, 12), 0);
}

/** The whole body of the element at `pos` (id check included). */
async function elementBody(src: ByteSource, pos: number, id: number): Promise<Uint8Array | null> {
  const h = await headerAt(src, pos);
  if (!h || h.id !== id || h.size === UNKNOWN_SIZE || h.size > MAX_ELEMENT_READ) return null;
  return src.read(pos + h.headerLen, h.size);
}

export interface MatroskaLayout {
  segmentDataStart: number;
  /** Absolute file positions of the top-level elements found (first of each kind). */
  positions: Partial<Record<'Info' | 'Tracks' | 'Cues', number>>;
  seekHeadsVisited: number;
}

/** Finds Info, Tracks and Cues: SeekHeads first (following nested ones), then a top-level walk. */
export async function locateElements(src: ByteSource): Promise<MatroskaLayout | null> {
  const ebml = await headerAt(src, 0);
  if (!ebml || ebml.id !== ID.EBML || ebml.size === UNKNOWN_SIZE) return null;
  const segPos = ebml.headerLen + ebml.size;
  const seg = await headerAt(src, segPos);
  if (!seg || seg.id !== ID.Segment) return null;
  const dataStart = segPos + seg.headerLen;
  const segEnd = seg.size === UNKNOWN_SIZE ? src.size : Math.min(src.size, dataStart + seg.size);
  const positions: MatroskaLayout['positions'] = {};
  const names: Record<number, 'Info' | 'Tracks' | 'Cues'> = { [ID.Info]: 'Info', [ID.Tracks]: 'Tracks', [ID.Cues]: 'Cues' };

  // SeekHeads: the first one sits at the start of the segment; any may point to another.
  const visited = new Set<number>();
  const queue: number[] = [];
  const first = await headerAt(src, dataStart);
  if (first?.id === ID.SeekHead) queue.push(dataStart);
  while (queue.length > 0 && visited.size < 16) {
    const pos = queue.shift()!;
    if (visited.has(pos)) continue;
    visited.add(pos);
    const body = await elementBody(src, pos, ID.SeekHead);
    if (!body) continue;
    for (const seek of children(body, 0, body.length)) {
      if (seek.id !== ID.Seek) continue;
      let target = 0;
      let at = -1;
      for (const f of children(body, seek.start, seek.end)) {
        if (f.id === ID.SeekID) target = readUint(body, f.start, f.end - f.start);
        if (f.id === ID.SeekPosition) at = dataStart + readUint(body, f.start, f.end - f.start);
      }
      if (at < dataStart || at >= segEnd) continue;
      if (target === ID.SeekHead) queue.push(at);
      else {
        const name = names[target];
        if (name && positions[name] === undefined) positions[name] = at;
      }
    }
  }

  // No index named the Cues: walk the top-level elements (reading only headers, skipping Clusters).
  if (positions.Cues === undefined) {
    let p = dataStart;
    for (let n = 0; p < segEnd && n < 100_000; n++) {
      const h = await headerAt(src, p);
      if (!h || h.size === UNKNOWN_SIZE) break;
      const name = names[h.id];
      if (name && positions[name] === undefined) positions[name] = p;
      p += h.headerLen + h.size;
    }
  }
  return { segmentDataStart: dataStart, positions, seekHeadsVisited: visited.size };
}

/** Keyframe times in ms of the first video track from the Cues, or null when the file has none usable. */
export async function matroskaCueKeyframes(src: ByteSource): Promise<number[] | null> {
  const layout = await locateElements(src);
  if (!layout || layout.positions.Cues === undefined) return null;

  let timecodeScale = 1_000_000; // ns per tick, the Matroska default
  if (layout.positions.Info !== undefined) {
    const info = await elementBody(src, layout.positions.Info, ID.Info);
    for (const f of info ? children(info, 0, info.length) : []) {
      if (f.id === ID.TimecodeScale) timecodeScale = readUint(info!, f.start, f.end - f.start);
    }
  }

  let videoTrack: number | null = null;
  if (layout.positions.Tracks !== undefined) {
    const tracks = await elementBody(src, layout.positions.Tracks, ID.Tracks);
    for (const entry of tracks ? children(tracks, 0, tracks.length) : []) {
      if (entry.id !== ID.TrackEntry) continue;
      let num = 0;
      let type = 0;
      for (const f of children(tracks!, entry.start, entry.end)) {
        if (f.id === ID.TrackNumber) num = readUint(tracks!, f.start, f.end - f.start);
        if (f.id === ID.TrackType) type = readUint(tracks!, f.start, f.end - f.start);
      }
      if (type === 1) {
        videoTrack = num;
        break;
      }
    }
  }
  if (videoTrack === null) return null;

  const cues = await elementBody(src, layout.positions.Cues, ID.Cues);
  if (!cues) return null;
  const out: number[] = [];
  for (const point of children(cues, 0, cues.length)) {
    if (point.id !== ID.CuePoint) continue;
    let time = -1;
    let forVideo = false;
    for (const f of children(cues, point.start, point.end)) {
      if (f.id === ID.CueTime) time = readUint(cues, f.start, f.end - f.start);
      if (f.id === ID.CueTrackPositions) {
        for (const g of children(cues, f.start, f.end)) {
          if (g.id === ID.CueTrack && readUint(cues, g.start, g.end - g.start) === videoTrack) forVideo = true;
        }
      }
    }
    if (time >= 0 && forVideo) out.push(Math.round((time * timecodeScale) / 1_000_000));
  }
  if (out.length === 0) return null;
  return [...new Set(out)].sort((a, b) => a - b);
}
