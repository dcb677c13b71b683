// The trickplay job: one sprite sheet of thumbnails, one every `intervalS` seconds of the asset, laid
// out `columns` across, written into the playback cache under a temporary name and renamed when whole.
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { PlaybackThumbnailsJob } from '../../../platform/bus/subjects';
import { AppError } from '../../../platform/errors';
import { isInside } from '../../../platform/paths';
import type { JobHandler } from './index';
import type { PlaybackSegmentDeps } from './playback-segment';

const failed = (message: string, retryable = true) => new AppError(retryable ? 'PLAYBACK_FFMPEG_FAILED' : 'PLAYBACK_SOURCE_UNREADABLE', message);

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
        const proc = Bun.spawn([deps.ffmpegPath, ...thumbnailArgs(p, input, tmp)], { stdout: 'ignore', stderr: 'pipe' });
        const stop = () => proc.kill('SIGKILL');
        signal.addEventListener('abort', stop, { once: true });
        const timer = setTimeout(stop, deps.timeoutMs);
        const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
        clearTimeout(timer);
        signal.removeEventListener('abort', stop);
        signal.throwIfAborted();
        if (code !== 0 || !existsSync(tmp)) {
          log.warn('ffmpeg could not make the thumbnails', { code, signal: proc.signalCode, stderr: stderr.slice(0, 400) });
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
