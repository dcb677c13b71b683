// The audio and subtitle tracks of an asset as GET /works/{id}/assets lists them: audio streams, then
// embedded subtitle streams and the sidecar files found beside the medium, languages as ISO 639-2/T.
import type { ProbeStream } from '../../../platform/bus/media-shapes';
import { iso6392 } from './languages';
import type { SidecarSubtitle } from './local-metadata';

/** Subtitle codecs ffmpeg turns into WebVTT; the others are pictures (PGS, VobSub, DVB). */
export const TEXT_SUBTITLE_CODECS = new Set(['subrip', 'srt', 'ass', 'ssa', 'mov_text', 'webvtt', 'text', 'microdvd', 'subviewer']);
const SUBTITLE_FORMAT: Record<string, string> = {
  subrip: 'srt', srt: 'srt', ass: 'ass', ssa: 'ass', mov_text: 'mov_text', webvtt: 'vtt', hdmv_pgs_subtitle: 'pgs', dvd_subtitle: 'vobsub', dvb_subtitle: 'dvb',
};

/** The audio streams of an index as the assets list shows them. */
export function audioOf(streams: ProbeStream[]) {
  return streams
    .filter((s) => s.type === 'audio')
    .map((s) => ({ index: s.index, language: iso6392(s.language), codec: s.codec, channels: s.channels ?? 0, default: s.defaultFlag }));
}

/** Embedded subtitle streams, then the sidecar files. */
export function subtitlesOf(streams: ProbeStream[], files: SidecarSubtitle[]) {
  return [
    ...streams
      .filter((s) => s.type === 'subtitle')
      .map((s) => ({ index: s.index, language: iso6392(s.language), format: SUBTITLE_FORMAT[s.codec] ?? s.codec, text: TEXT_SUBTITLE_CODECS.has(s.codec), source: 'embedded' as const })),
    ...files.map((f) => ({ language: f.language, format: f.format, text: true, source: 'sidecar' as const })),
  ];
}
