// What a client may do with a medium without transcoding. The documented list (docs/catalog.md#capabilities):
//   seekable           duration known and, for video, a keyframe index exists
//   keyframe-index     keyframe positions are known (from the container index or a packet scan)
//   direct-play        container and every audio/video codec play natively in common browsers/clients
//   direct-play-container  the container alone qualifies (remuxing the streams would do)
//   video-transcode    the video codec needs transcoding for direct play
//   audio-transcode    an audio codec needs transcoding for direct play
//   text-subtitles     at least one text subtitle stream (srt, ass, mov_text, webvtt)
//   image-subtitles    at least one bitmap subtitle stream (PGS, VobSub, DVB)
//   audio-only         no video stream
//   multi-audio        more than one audio stream
import type { ProbeStream } from '../../../platform/bus/media-shapes';

export const CAPABILITIES = [
  'seekable', 'keyframe-index', 'direct-play', 'direct-play-container', 'video-transcode', 'audio-transcode',
  'text-subtitles', 'image-subtitles', 'audio-only', 'multi-audio',
] as const;

const DIRECT_CONTAINERS = new Set(['mp4', 'm4a', 'webm', 'mkv', 'mov', 'mp3', 'ogg', 'flac']);
const DIRECT_VIDEO = new Set(['h264', 'hevc', 'vp8', 'vp9', 'av1']);
const DIRECT_AUDIO = new Set(['aac', 'mp3', 'opus', 'vorbis', 'flac', 'ac3', 'eac3']);
const TEXT_SUBS = new Set(['subrip', 'srt', 'ass', 'ssa', 'mov_text', 'webvtt', 'text']);
const IMAGE_SUBS = new Set(['hdmv_pgs_subtitle', 'dvd_subtitle', 'dvb_subtitle', 'xsub']);

export function capabilitiesOf(container: string, durationMs: number, streams: ProbeStream[], keyframesMs: number[]): string[] {
  const video = streams.filter((s) => s.type === 'video');
  const audio = streams.filter((s) => s.type === 'audio');
  const subs = streams.filter((s) => s.type === 'subtitle');
  const caps = new Set<string>();
  if (keyframesMs.length > 0) caps.add('keyframe-index');
  if (durationMs > 0 && (video.length === 0 || keyframesMs.length > 0)) caps.add('seekable');
  const containerOk = DIRECT_CONTAINERS.has(container);
  const videoOk = video.every((s) => DIRECT_VIDEO.has(s.codec));
  const audioOk = audio.every((s) => DIRECT_AUDIO.has(s.codec));
  if (containerOk) caps.add('direct-play-container');
  if (containerOk && videoOk && audioOk) caps.add('direct-play');
  if (!videoOk) caps.add('video-transcode');
  if (!audioOk) caps.add('audio-transcode');
  if (subs.some((s) => TEXT_SUBS.has(s.codec))) caps.add('text-subtitles');
  if (subs.some((s) => IMAGE_SUBS.has(s.codec))) caps.add('image-subtitles');
  if (video.length === 0) caps.add('audio-only');
  if (audio.length > 1) caps.add('multi-audio');
  return CAPABILITIES.filter((c) => caps.has(c));
}
