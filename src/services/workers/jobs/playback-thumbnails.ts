// The trickplay job: one sprite sheet of thumbnails, one every `intervalS` seconds of the asset, laid
// out `columns` across, written into the playback cache under a temporary name and renamed when whole.
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { PlaybackThumbnailsJob } from '../../../platform/bus/subjects';
import { isInside } from '../../../platform/paths';
import type { JobHandler } from './index';
import { failed, runFfmpeg, type PlaybackSegmentDeps } from './playback-segment';


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
      const output = resolve(cacheRoot, p.output);
      if (!isInside(cacheRoot, output) || output === cacheRoot) throw failed('the sprite path leaves the cache', false);
      if (existsSync(output)) return;
      const base = deps.mediaRoots[p.root];
      if (base === undefined) throw failed(`media root ${p.root} is not configured on the worker`, false);
      let input: string;
      try {
        const root = realpathSync(base);
        input = realpathSync(join(root, p.path));
        if (!isInside(root, input)) throw new Error('outside');
      } catch {
        throw failed('the source file cannot be read', false);
      }
      const work = join(cacheRoot, '.work', `${job.id}-${job.attempt}`);
      mkdirSync(work, { recursive: true });
      try {
        const tmp = join(work, 'sprite.jpg');
        const { code, stderr, signalCode } = await runFfmpeg(deps, thumbnailArgs(p, input, tmp), signal);
        if (code !== 0 || !existsSync(tmp)) {
          log.warn('ffmpeg could not make the thumbnails', { code, signal: signalCode, stderr: stderr.slice(0, 400) });
          throw failed('ffmpeg could not make the thumbnails');
        }
        mkdirSync(dirname(output), { recursive: true });
        renameSync(tmp, output);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  };
}
