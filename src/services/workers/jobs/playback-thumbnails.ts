// The trickplay job: one sprite sheet of thumbnails, one every `intervalS` seconds of the asset, laid
// out `columns` across, written into the playback cache under a temporary name and renamed when whole.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PlaybackThumbnailsJob } from '../../../platform/bus/subjects';
import type { JobHandler } from './index';
import { cachePath, failed, intoCache, mediaSource, runFfmpeg, type PlaybackSegmentDeps } from './playback-segment';


export function thumbnailArgs(job: PlaybackThumbnailsJob, input: string, out: string): string[] {
  const filter = `fps=1/${job.intervalS},scale=${job.width}:${job.height},tile=${job.columns}x${job.rows}`;
  return ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-i', input, '-map', '0:v:0', '-vf', filter, '-frames:v', '1', '-q:v', '5', out];
}

export function createPlaybackThumbnailsJob(deps: PlaybackSegmentDeps): JobHandler<'playback.thumbnails'> {
  const cacheRoot = resolve(deps.cacheDir);
  return {
    type: 'playback.thumbnails',
    async run({ job, signal, log }) {
      const p = job.payload;
      const output = cachePath(cacheRoot, p.output, 'sprite');
      if (existsSync(output)) return;
      const input = mediaSource(deps.mediaRoots, p.root, p.path);
      await intoCache(cacheRoot, job, output, 'sprite.jpg', async (tmp) => {
        const { code, stderr, signalCode } = await runFfmpeg(deps, thumbnailArgs(p, input, tmp), signal);
        if (code !== 0 || !existsSync(tmp)) {
          log.warn('ffmpeg could not make the thumbnails', { code, signal: signalCode, stderr: stderr.slice(0, 400) });
          throw failed('ffmpeg could not make the thumbnails');
        }
        return tmp;
      });
    },
  };
}
