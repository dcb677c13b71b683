// Trickplay: the layout of an asset's thumbnail sprite and the WebVTT whose cues point a seek bar at
// each thumbnail (`sprite.jpg#xywh=x,y,w,h`), one cue per `intervalS` of the asset.
import type { PlayableAsset } from '../../platform/bus/subjects';

export interface SpritePlan {
  intervalS: number;
  width: number;
  height: number;
  columns: number;
  rows: number;
  count: number;
}

const THUMB_WIDTH = 160;
const MAX_COLUMNS = 10;

/** Null for an asset without video. Heights are even (H.264 and most scalers want it). */
export function spritePlan(asset: PlayableAsset, intervalS: number): SpritePlan | null {
  const video = asset.streams.find((s) => s.type === 'video');
  if (!video) return null;
  const aspect = video.width && video.height ? video.height / video.width : 9 / 16;
  const height = Math.max(2, Math.round((THUMB_WIDTH * aspect) / 2) * 2);
  const count = Math.max(1, Math.ceil(asset.durationMs / (intervalS * 1000)));
  const columns = Math.min(MAX_COLUMNS, count);
  return { intervalS, width: THUMB_WIDTH, height, columns, rows: Math.ceil(count / columns), count };
}

const stamp = (ms: number) => {
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(ms % 1000, 3)}`;
};

export function thumbnailsVtt(plan: SpritePlan, durationMs: number, spriteName: string): string {
  const lines = ['WEBVTT', ''];
  for (let i = 0; i < plan.count; i++) {
    const from = i * plan.intervalS * 1000;
    const to = Math.min(durationMs, (i + 1) * plan.intervalS * 1000);
    const x = (i % plan.columns) * plan.width;
    const y = Math.floor(i / plan.columns) * plan.height;
    lines.push(`${stamp(from)} --> ${stamp(to)}`, `${spriteName}#xywh=${x},${y},${plan.width},${plan.height}`, '');
  }
  return lines.join('\n');
}
