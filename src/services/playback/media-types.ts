// The media type and file extension a direct session serves, from the container the catalog named
// (ffprobe's demuxer refined by the brand: mp4, m4a, mov, mkv, webm, mp3, ...), never from the file's
// own extension alone: a browser's <video> and <audio> pick a demuxer by this type.

interface Format {
  ext: string;
  video: string;
  /** The type when the file has no video stream (an audio-only MP4 is audio/mp4, not video/mp4). */
  audio: string;
  audioExt?: string;
}

const FORMATS: Record<string, Format> = {
  mp4: { ext: 'mp4', video: 'video/mp4', audio: 'audio/mp4', audioExt: 'm4a' },
  m4a: { ext: 'm4a', video: 'audio/mp4', audio: 'audio/mp4' }, // the M4A brand: audio (a video stream is its cover)
  mov: { ext: 'mov', video: 'video/quicktime', audio: 'audio/mp4', audioExt: 'm4a' },
  mkv: { ext: 'mkv', video: 'video/x-matroska', audio: 'audio/x-matroska', audioExt: 'mka' },
  webm: { ext: 'webm', video: 'video/webm', audio: 'audio/webm' },
  ogg: { ext: 'ogv', video: 'video/ogg', audio: 'audio/ogg', audioExt: 'ogg' },
  mp3: { ext: 'mp3', video: 'audio/mpeg', audio: 'audio/mpeg' },
  flac: { ext: 'flac', video: 'audio/flac', audio: 'audio/flac' },
  wav: { ext: 'wav', video: 'audio/wav', audio: 'audio/wav' },
  aac: { ext: 'aac', video: 'audio/aac', audio: 'audio/aac' },
  avi: { ext: 'avi', video: 'video/x-msvideo', audio: 'video/x-msvideo' },
  mpegts: { ext: 'ts', video: 'video/mp2t', audio: 'video/mp2t' },
  mpeg: { ext: 'mpg', video: 'video/mpeg', audio: 'audio/mpeg' },
  asf: { ext: 'wmv', video: 'video/x-ms-wmv', audio: 'audio/x-ms-wma', audioExt: 'wma' },
  flv: { ext: 'flv', video: 'video/x-flv', audio: 'video/x-flv' },
};

/** ffprobe demuxer names the catalog passes on as they are, mapped to the names above. */
const ALIASES: Record<string, string> = { matroska: 'mkv', mov: 'mov', mpegvideo: 'mpeg', oga: 'ogg' };

const UNKNOWN = { ext: 'bin', type: 'application/octet-stream' };

/**
 * The extension and media type of a direct session's file. Audio-only files get the audio type of
 * their container (an audio-only MP4 or Matroska is audio/mp4, audio/x-matroska); cover art is not
 * video (the catalog's streams say which are real video).
 */
export function directFormat(container: string, hasVideo: boolean): { ext: string; type: string } {
  const name = container.toLowerCase().split(',')[0]!;
  const f = FORMATS[name] ?? FORMATS[ALIASES[name] ?? ''];
  if (!f) return UNKNOWN;
  return hasVideo ? { ext: f.ext, type: f.video } : { ext: f.audioExt ?? f.ext, type: f.audio };
}

/**
 * The file name a direct answer suggests in Content-Disposition: the medium's own name with the
 * extension of what is served, reduced to characters every header and file system takes; the
 * UTF-8 form (RFC 6266 filename*) keeps the real name for clients that read it.
 */
export function contentDisposition(fileName: string, ext: string): string {
  const stem = fileName.replace(/\.[^./]{1,8}$/, '') || 'file';
  const full = `${stem}.${ext}`;
  const ascii = full.normalize('NFKD').replace(/[^\x20-\x7e]/g, '').replace(/["\\;]/g, '_').trim() || `file.${ext}`;
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(full)}`;
}
