// An asset's HLS renditions, from its catalog facts alone (no I/O): the source variant and the rungs
// of the ladder below it, every audio stream, every text subtitle (embedded or a sidecar file), the
// segment method of each, and the names players show. playback.service.ts serves what this plans.
import type { PlayableAsset } from '../../platform/bus/subjects';
import { audioCodec, avcCodec, LADDER_HEIGHTS, RUNG_KBPS, type AudioRendition, type SubtitleRendition, type VariantPlan } from './hls';

/** H.264 video and AAC audio go into MPEG-TS as they are; H.264 with other audio keeps its video; anything else is transcoded. */
export function segmentMethod(asset: PlayableAsset): 'copy' | 'copy-video' | 'transcode' {
  const video = asset.streams.find((s) => s.type === 'video');
  const audio = asset.streams.find((s) => s.type === 'audio');
  if (video && video.codec !== 'h264') return 'transcode';
  if (!audio || audio.codec === 'aac') return 'copy';
  // Audio alone (no video to keep) or H.264 beside AC-3, DTS, TrueHD...: only the audio is made AAC.
  return video ? 'copy-video' : 'transcode';
}

/** Which rendition a segment belongs to: the source, a rung of the ladder (its height), or an audio stream alone. */
export type Rendition = { kind: 'source' } | { kind: 'rung'; height: number } | { kind: 'audio'; stream: number };

/** Subtitle codecs ffmpeg turns into WebVTT; bitmap ones (PGS, VobSub) are not renditions. */
const TEXT_SUBTITLES = new Set(['subrip', 'srt', 'ass', 'ssa', 'mov_text', 'webvtt', 'text', 'subviewer', 'microdvd']);
const evenWidth = (w: number) => Math.max(2, Math.round(w / 2) * 2);
const LANGUAGE_NAMES = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'code' });
/** A language's English name for a player's menu (`fra` -> French); `Unknown` for `und`, the code for one ICU lacks. */
export function languageName(code: string): string {
  if (!code || code === 'und') return 'Unknown';
  try {
    return LANGUAGE_NAMES.of(code) ?? code;
  } catch {
    return code;
  }
}
const CHANNEL_NAMES: Record<number, string> = { 1: 'Mono', 2: 'Stereo', 6: '5.1', 8: '7.1' };

/** The renditions of an asset's master playlist: the source and its rungs, its audio streams, its text subtitles. */
export function hlsPlan(asset: PlayableAsset): { variants: VariantPlan[]; audio: AudioRendition[]; subtitles: SubtitleRendition[] } {
  const video = asset.streams.find((s) => s.type === 'video');
  const audios = asset.streams.filter((s) => s.type === 'audio');
  const firstAudio = audios[0];
  const method = segmentMethod(asset);
  const audioPart = firstAudio ? `,${method === 'copy' ? audioCodec(firstAudio.codec) : 'mp4a.40.2'}` : '';
  const videoCopied = method === 'copy' || method === 'copy-video';
  const variants: VariantPlan[] = [];
  const sourceHeight = video?.height ?? 0;
  const sourceVideoCodec = video ? (videoCopied ? avcCodec(video.profile, video.level) : avcCodec('high', sourceHeight > 1080 ? 51 : 40)) : '';
  variants.push({
    playlist: 'media.m3u8', prefix: 'segment-', width: video?.width, resolutionHeight: video?.height,
    bandwidthBps: asset.bitrateBps || 1_000_000, codecs: (sourceVideoCodec + audioPart).replace(/^,/, ''),
  });
  if (video && video.width && sourceHeight) {
    for (const h of LADDER_HEIGHTS.filter((h) => h < sourceHeight)) {
      variants.push({
        playlist: `media-${h}p.m3u8`, prefix: `segment-${h}p-`, height: h, width: evenWidth((video.width * h) / sourceHeight), resolutionHeight: h,
        bandwidthBps: RUNG_KBPS[h]! * 1000 + (firstAudio ? 128_000 : 0), codecs: `${avcCodec('high', 40)}${firstAudio ? ',mp4a.40.2' : ''}`,
      });
    }
  }
  // Renditions only beside a video: an audio-only asset plays its first audio stream as it is.
  const names = new Set<string>();
  const unique = (base: string) => {
    let name = base;
    for (let i = 2; names.has(name); i++) name = `${base} (${i})`;
    names.add(name);
    return name;
  };
  const defaultAudio = audios.find((a) => a.defaultFlag) ?? firstAudio;
  const audio: AudioRendition[] = video
    ? audios.map((a, i) => ({
        stream: a.index, language: a.language || 'und', default: a === defaultAudio, muxed: i === 0,
        name: unique(`${languageName(a.language)} (${a.codec.toUpperCase()} ${CHANNEL_NAMES[a.channels ?? 0] ?? `${a.channels ?? 0} ch`})`), method: a.codec === 'aac' ? ('copy' as const) : ('transcode' as const),
      }))
    : [];
  const subtitles: SubtitleRendition[] = [];
  if (video) {
    for (const s of asset.streams) {
      if (s.type !== 'subtitle' || !TEXT_SUBTITLES.has(s.codec)) continue;
      subtitles.push({ n: subtitles.length, language: s.language || 'und', name: unique(languageName(s.language)), default: false, forced: false, stream: s.index });
    }
    for (const f of asset.subtitleFiles ?? []) {
      subtitles.push({ n: subtitles.length, language: f.language, name: unique(languageName(f.language)), default: false, forced: /\.forced\./i.test(f.path), file: f.path });
    }
  }
  return { variants, audio, subtitles };
}

/** Segment names of a rendition: `${prefix}<n>.ts`. */
export const prefixOf = (r: Rendition) => (r.kind === 'source' ? 'segment-' : r.kind === 'rung' ? `segment-${r.height}p-` : `audio-${r.stream}-segment-`);
