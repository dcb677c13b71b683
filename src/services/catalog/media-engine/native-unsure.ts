// What the native header readers (mp4-header.ts, matroska-header.ts, codec-config.ts) share: the
// "unsure" verdict that sends a file to ffprobe, and ffprobe's own arithmetic for times and rates.

/** Unsure: the caller asks ffprobe. */
export class Unsure extends Error {}
export const unsure = (why: string): never => {
  throw new Unsure(why);
};

export const MAX_HEADER_BYTES = 64 * 1024 * 1024; // a moov, Tracks or Tags larger than this is left to ffprobe
export const AV_TIME_BASE = 1_000_000;

/** ffprobe's `format.duration` ("%f" of microseconds) and `format.bit_rate` from the file size. */
export function formatTimes(durationUs: number, size: number) {
  if (!(durationUs > 0)) unsure('no duration');
  return {
    duration: (durationUs / AV_TIME_BASE).toFixed(6),
    bit_rate: String(Math.trunc((size * 8 * AV_TIME_BASE) / durationUs)),
  };
}

/** av_rescale(a, b, c): a * b / c rounded to nearest, halves away from zero. */
export function rescale(a: number, b: number, c: number): number {
  const n = BigInt(Math.round(a)) * BigInt(Math.round(b));
  const d = BigInt(Math.round(c));
  return Number((n + d / 2n) / d);
}
