// The subtitle job: one subtitle of an asset (an embedded text stream, or a sidecar file beside the
// medium on the same root) as WebVTT, written into the playback cache under a temporary name and
// renamed when whole.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PlaybackSubtitlesJob } from '../../../platform/bus/subjects';
import type { JobHandler } from './index';
import { cachePath, failed, intoCache, mediaSource, runFfmpeg, type PlaybackSegmentDeps } from './playback-segment';

/** A sidecar is read by the demuxer its extension names, never by what its bytes look like (a playlist would fetch URLs). */
const SIDECAR_DEMUXERS: Record<string, string> = { srt: 'srt', vtt: 'webvtt', ass: 'ass', ssa: 'ass' };

export function subtitleArgs(job: PlaybackSubtitlesJob, input: string, out: string): string[] {
  const demuxer = job.file ? SIDECAR_DEMUXERS[job.file.slice(job.file.lastIndexOf('.') + 1).toLowerCase()] : undefined;
  if (job.file && !demuxer) throw failed('the sidecar is not a subtitle format Keel reads', false);
  const pick = job.stream !== undefined ? ['-map', `0:${job.stream}`] : ['-map', '0:s:0'];
  return [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-protocol_whitelist', 'file',
    ...(demuxer ? ['-f', demuxer] : []), '-i', `file:${input}`, ...pick, '-c:s', 'webvtt', '-f', 'webvtt', out,
  ];
}

export function createPlaybackSubtitlesJob(deps: PlaybackSegmentDeps): JobHandler<'playback.subtitles'> {
  const cacheRoot = resolve(deps.cacheDir);
  return {
    type: 'playback.subtitles',
    async run({ job, signal, log }) {
      const p = job.payload;
      const output = cachePath(cacheRoot, p.output, 'subtitle');
      if (existsSync(output)) return;
      const input = mediaSource(deps.mediaRoots, p.root, p.file ?? p.path);
      await intoCache(cacheRoot, job, output, 'subtitles.vtt', async (tmp) => {
        const { code, stderr, signalCode } = await runFfmpeg(deps, subtitleArgs(p, input, tmp), signal);
        if (code !== 0 || !existsSync(tmp)) {
          log.warn('ffmpeg could not make the subtitles', { code, signal: signalCode, stderr: stderr.slice(0, 400) });
          throw failed('ffmpeg could not make the subtitles');
        }
        return tmp;
      });
    },
  };
}
