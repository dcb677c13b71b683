// Playlists from the keyframe index: segments of about the target length whose every boundary is an
// indexed keyframe, so a seek (which lands on a segment start) always lands on a keyframe.

export interface Segment {
  index: number;
  startMs: number;
  endMs: number;
}

/**
 * Cuts [0, durationMs) at keyframes: each boundary is the keyframe nearest to the previous boundary
 * plus `targetMs`. Without keyframes (audio only) any point will do, so the cut is a plain grid.
 */
export function cutSegments(keyframesMs: number[], durationMs: number, targetMs: number): Segment[] {
  const bounds = [0];
  if (keyframesMs.length === 0) {
    for (let t = targetMs; t < durationMs; t += targetMs) bounds.push(t);
  } else {
    const keys = keyframesMs.filter((k) => k > 0 && k < durationMs);
    let i = 0;
    while (i < keys.length) {
      const want = bounds[bounds.length - 1]! + targetMs;
      while (i < keys.length && keys[i]! < want) i++;
      // keys[i] is the first at or after `want`; the one before it may be nearer.
      const after = keys[i];
      const before = keys[i - 1];
      const last = bounds[bounds.length - 1]!;
      const pick = after === undefined ? undefined : before !== undefined && before > last && want - before < after - want ? before : after;
      if (pick === undefined) break;
      bounds.push(pick);
      i = keys.indexOf(pick) + 1;
    }
  }
  // A last piece much shorter than the target joins the one before it.
  if (bounds.length > 1 && durationMs - bounds[bounds.length - 1]! < targetMs / 4) bounds.pop();
  return bounds.map((startMs, index) => ({ index, startMs, endMs: bounds[index + 1] ?? durationMs }));
}

/** The standard rungs of a ladder; a source gets those strictly below its own height. */
export const LADDER_HEIGHTS = [1080, 720, 480, 360] as const;
/** Video bitrate cap of each rung (kbit/s), as the segment job encodes it (-maxrate). */
export const RUNG_KBPS: Record<number, number> = { 1080: 5000, 720: 2800, 480: 1400, 360: 800 };

export interface VariantPlan {
  /** The media playlist's name: media.m3u8 for the source, media-<h>p.m3u8 for a rung. */
  playlist: string;
  /** Segment names: `${prefix}<n>.ts`. */
  prefix: string;
  /** A rung's height; undefined for the source. */
  height?: number;
  width?: number;
  resolutionHeight?: number;
  bandwidthBps: number;
  codecs: string;
}

export interface AudioRendition {
  stream: number;
  language: string;
  name: string;
  default: boolean;
  /** The first audio stream is in the variants' own segments (no URI); the others have their playlist. */
  muxed: boolean;
  method: 'copy' | 'transcode';
}

export interface SubtitleRendition {
  n: number;
  language: string;
  name: string;
  default: boolean;
  forced: boolean;
  stream?: number;
  file?: string;
}

const H264_PROFILES: Record<string, string> = {
  'constrained baseline': '42E0', baseline: '4200', main: '4D40', extended: '5800', high: '6400', 'high 10': '6E00', 'high 4:2:2': '7A00', 'high 4:4:4 predictive': 'F400',
};

/** RFC 6381 codec of an H.264 stream from its profile and level; High 4.0 when they are not known. */
export function avcCodec(profile?: string, level?: number): string {
  const p = profile ? H264_PROFILES[profile.toLowerCase()] : undefined;
  const l = level && level > 0 && level < 256 ? level : 40;
  return `avc1.${p ?? '6400'}${l.toString(16).toUpperCase().padStart(2, '0')}`;
}

const AUDIO_CODECS: Record<string, string> = { aac: 'mp4a.40.2', mp3: 'mp4a.40.34', ac3: 'ac-3', eac3: 'ec-3' };
export const audioCodec = (codec: string) => AUDIO_CODECS[codec] ?? 'mp4a.40.2';

/** A quoted-string attribute value: no quote, no line break (RFC 8216 4.2). */
const quoted = (s: string) => `"${s.replace(/["\r\n]/g, "'")}"`;

/** The master playlist: every variant, every audio rendition, every text subtitle rendition. */
export function masterPlaylist(opts: { variants: VariantPlan[]; audio: AudioRendition[]; subtitles: SubtitleRendition[] }): string {
  const lines = ['#EXTM3U', '#EXT-X-VERSION:4', '#EXT-X-INDEPENDENT-SEGMENTS'];
  for (const a of opts.audio) {
    lines.push(
      `#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME=${quoted(a.name)},LANGUAGE=${quoted(a.language)},DEFAULT=${a.default ? 'YES' : 'NO'},AUTOSELECT=YES` +
        (a.muxed ? '' : `,URI="audio-${a.stream}.m3u8"`),
    );
  }
  for (const s of opts.subtitles) {
    lines.push(
      `#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME=${quoted(s.name)},LANGUAGE=${quoted(s.language)},DEFAULT=${s.default ? 'YES' : 'NO'},` +
        `AUTOSELECT=YES,FORCED=${s.forced ? 'YES' : 'NO'},URI="subtitles-${s.n}.m3u8"`,
    );
  }
  const groups = (opts.audio.length ? ',AUDIO="audio"' : '') + (opts.subtitles.length ? ',SUBTITLES="subs"' : '');
  for (const v of opts.variants) {
    const resolution = v.width && v.resolutionHeight ? `,RESOLUTION=${v.width}x${v.resolutionHeight}` : '';
    lines.push(`#EXT-X-STREAM-INF:BANDWIDTH=${Math.max(1, Math.round(v.bandwidthBps))}${resolution},CODECS="${v.codecs}"${groups}`, v.playlist);
  }
  lines.push('');
  return lines.join('\n');
}

/** A VOD media playlist of the segments; names end in .ts as strict clients require. */
export function mediaPlaylist(segments: Segment[], prefix = 'segment-'): string {
  const longest = Math.max(1, ...segments.map((s) => Math.ceil((s.endMs - s.startMs) / 1000)));
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3', `#EXT-X-TARGETDURATION:${longest}`, '#EXT-X-MEDIA-SEQUENCE:0', '#EXT-X-PLAYLIST-TYPE:VOD'];
  for (const s of segments) lines.push(`#EXTINF:${((s.endMs - s.startMs) / 1000).toFixed(3)},`, `${prefix}${s.index}.ts`);
  lines.push('#EXT-X-ENDLIST', '');
  return lines.join('\n');
}

/** A subtitle rendition's playlist: one WebVTT segment per media segment, at the same boundaries. */
export function subtitlesPlaylist(n: number, segments: Segment[]): string {
  const longest = Math.max(1, ...segments.map((s) => Math.ceil((s.endMs - s.startMs) / 1000)));
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3', `#EXT-X-TARGETDURATION:${longest}`, '#EXT-X-MEDIA-SEQUENCE:0', '#EXT-X-PLAYLIST-TYPE:VOD'];
  for (const s of segments) lines.push(`#EXTINF:${((s.endMs - s.startMs) / 1000).toFixed(3)},`, `subtitles-${n}-${s.index}.vtt`);
  lines.push('#EXT-X-ENDLIST', '');
  return lines.join('\n');
}

/** `hh:mm:ss.mmm` or `mm:ss.mmm` in ms; NaN when it is neither. */
function vttTime(t: string): number {
  const m = /^(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{3})$/.exec(t.trim());
  return m ? ((Number(m[1] ?? 0) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]) : NaN;
}

/**
 * The part of a WebVTT file for one segment: its header blocks (WEBVTT, STYLE, REGION) and the cues
 * that overlap [startMs, endMs). A cue across a boundary is in both segments; players drop the
 * repeat (hls.js keys cues by start, end and text).
 */
export function vttPiece(vtt: string, startMs: number, endMs: number): string {
  const blocks = vtt.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n').split(/\n{2,}/);
  const kept = blocks.filter((block, i) => {
    const timing = block.split('\n').find((l) => l.includes('-->'));
    if (!timing) return i === 0 || /^(STYLE|REGION)\b/.test(block);
    const [from, to] = timing.split('-->');
    const a = vttTime(from ?? '');
    const b = vttTime((to ?? '').trim().split(/\s+/)[0] ?? '');
    return a < endMs && b > startMs;
  });
  return kept.join('\n\n').trimEnd() + '\n';
}

/**
 * The WebVTT as HLS wants it: X-TIMESTAMP-MAP ties cue time 0 to the segments' first presentation
 * time, which the segment job shifts by a constant 10 s (90 kHz clock).
 */
export function withTimestampMap(vtt: string, offsetS = 10): string {
  const map = `X-TIMESTAMP-MAP=MPEGTS:${Math.round(offsetS * 90_000)},LOCAL:00:00:00.000`;
  const body = vtt.replace(/^\uFEFF/, '');
  const end = body.indexOf('\n');
  return end < 0 ? `WEBVTT\n${map}\n` : `${body.slice(0, end).trimEnd()}\n${map}${body.slice(end)}`;
}
