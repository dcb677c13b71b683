// Keyframe positions of an MP4/MOV file from the moov box: the first video track's sync samples
// (stss) placed in time by stts (decode deltas), ctts (composition offsets) and the edit list.
// Fragmented files (moof) have no such table; they return null and fall back to the packet scan.
import type { ByteSource } from './file-reader';

const MAX_MOOV = 256 * 1024 * 1024;
// Sample counts are the file's own claims: a few crafted bytes can claim billions. 10 million video
// samples is over 46 hours at 60 fps; a larger table is left to the packet scan.
const MAX_SAMPLES = 10_000_000;

interface Box {
  type: string;
  start: number; // body start
  end: number;
}

function* boxes(buf: Uint8Array, view: DataView, start: number, end: number): Generator<Box> {
  let p = start;
  while (p + 8 <= end) {
    let size = view.getUint32(p);
    const type = String.fromCharCode(buf[p + 4]!, buf[p + 5]!, buf[p + 6]!, buf[p + 7]!);
    let header = 8;
    if (size === 1) {
      if (p + 16 > end) return;
      size = Number(view.getBigUint64(p + 8));
      header = 16;
    } else if (size === 0) size = end - p;
    if (size < header || p + size > end) return;
    yield { type, start: p + header, end: p + size };
    p += size;
  }
}

function child(buf: Uint8Array, view: DataView, parent: Box, type: string): Box | undefined {
  for (const b of boxes(buf, view, parent.start, parent.end)) if (b.type === type) return b;
  return undefined;
}

function path(buf: Uint8Array, view: DataView, from: Box, types: string[]): Box | undefined {
  let cur: Box | undefined = from;
  for (const t of types) {
    if (!cur) return undefined;
    cur = child(buf, view, cur, t);
  }
  return cur;
}

/** Finds the moov box among the top-level boxes (it may follow mdat) and reads it whole. */
async function readMoov(src: ByteSource): Promise<Uint8Array | null> {
  let p = 0;
  for (let n = 0; p + 8 <= src.size && n < 10_000; n++) {
    const h = await src.read(p, 16);
    if (h.length < 8) return null;
    const v = new DataView(h.buffer, h.byteOffset, h.length);
    let size = v.getUint32(0);
    const type = String.fromCharCode(h[4]!, h[5]!, h[6]!, h[7]!);
    let header = 8;
    if (size === 1) {
      if (h.length < 16) return null;
      size = Number(v.getBigUint64(8));
      header = 16;
    } else if (size === 0) size = src.size - p;
    if (size < header) return null;
    if (type === 'moov') return size > MAX_MOOV ? null : src.read(p, size);
    p += size;
  }
  return null;
}

/** Keyframe times (ms) of the first video track, or null when the file has no usable sample tables. */
export async function mp4SyncKeyframes(src: ByteSource): Promise<number[] | null> {
  const moov = await readMoov(src);
  if (!moov) return null;
  const view = new DataView(moov.buffer, moov.byteOffset, moov.length);
  const root: Box = { type: 'moov', start: 8, end: moov.length };
  // A 64-bit moov header is 16 bytes long.
  if (view.getUint32(0) === 1) root.start = 16;

  const mvhd = child(moov, view, root, 'mvhd');
  const movieTimescale = mvhd ? (moov[mvhd.start] === 1 ? view.getUint32(mvhd.start + 20) : view.getUint32(mvhd.start + 12)) : 1000;

  for (const trak of boxes(moov, view, root.start, root.end)) {
    if (trak.type !== 'trak') continue;
    const hdlr = path(moov, view, trak, ['mdia', 'hdlr']);
    if (!hdlr || String.fromCharCode(...moov.subarray(hdlr.start + 8, hdlr.start + 12)) !== 'vide') continue;
    const mdhd = path(moov, view, trak, ['mdia', 'mdhd'])!;
    if (!mdhd) return null;
    const timescale = moov[mdhd.start] === 1 ? view.getUint32(mdhd.start + 20) : view.getUint32(mdhd.start + 12);
    const stbl = path(moov, view, trak, ['mdia', 'minf', 'stbl']);
    if (!stbl || timescale === 0) return null;

    // stts: decode time of every sample.
    const stts = child(moov, view, stbl, 'stts');
    if (!stts) return null;
    const sttsCount = view.getUint32(stts.start + 4);
    if (8 + sttsCount * 8 > stts.end - stts.start) return null;
    let samples = 0;
    for (let i = 0; i < sttsCount; i++) samples += view.getUint32(stts.start + 8 + i * 8);
    if (samples === 0 || samples > MAX_SAMPLES) return null;
    const dts = new Float64Array(samples);
    let t = 0;
    for (let i = 0, s = 0; i < sttsCount; i++) {
      const count = view.getUint32(stts.start + 8 + i * 8);
      const delta = view.getUint32(stts.start + 12 + i * 8);
      for (let k = 0; k < count; k++) {
        dts[s++] = t;
        t += delta;
      }
    }

    // ctts: composition offsets (signed in version 1).
    const ctts = child(moov, view, stbl, 'ctts');
    const offset = new Float64Array(samples);
    if (ctts) {
      const signed = moov[ctts.start] === 1;
      const n = view.getUint32(ctts.start + 4);
      let s = 0;
      for (let i = 0; i < n && s < dts.length; i++) {
        const count = view.getUint32(ctts.start + 8 + i * 8);
        const off = signed ? view.getInt32(ctts.start + 12 + i * 8) : view.getUint32(ctts.start + 12 + i * 8);
        for (let k = 0; k < count && s < dts.length; k++) offset[s++] = off;
      }
    }

    // Edit list: an empty edit delays the track; the first real edit says where presentation starts.
    let shift = 0;
    const elst = path(moov, view, trak, ['edts', 'elst']);
    if (elst) {
      const v1 = moov[elst.start] === 1;
      const n = view.getUint32(elst.start + 4);
      const entry = v1 ? 20 : 12;
      for (let i = 0; i < n; i++) {
        const e = elst.start + 8 + i * entry;
        const segDur = v1 ? Number(view.getBigUint64(e)) : view.getUint32(e);
        const mediaTime = v1 ? Number(view.getBigInt64(e + 8)) : view.getInt32(e + 4);
        if (mediaTime === -1) {
          shift += (segDur / movieTimescale) * timescale;
          continue;
        }
        shift -= mediaTime;
        break;
      }
    }

    // stss: 1-based sync sample numbers; absent means every sample is a sync sample.
    const stss = child(moov, view, stbl, 'stss');
    const syncs: number[] = [];
    if (stss) {
      const n = Math.min(view.getUint32(stss.start + 4), (stss.end - stss.start - 8) / 4);
      for (let i = 0; i < n; i++) syncs.push(view.getUint32(stss.start + 8 + i * 4) - 1);
    } else for (let i = 0; i < dts.length; i++) syncs.push(i);

    const out = syncs
      .filter((s) => s >= 0 && s < dts.length)
      .map((s) => Math.round(((dts[s]! + offset[s]! + shift) / timescale) * 1000));
    return [...new Set(out)].sort((a, b) => a - b);
  }
  return null;
}
