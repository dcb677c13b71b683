// The playback segment job: one HLS segment of an asset, cut by ffmpeg exactly between two indexed
// keyframes, written into the playback cache under a temporary name and renamed when whole, so a
// reader never sees half a segment and a job killed mid-way (kill -9 included) leaves nothing usable.
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { PlaybackSegmentJob } from '../../../platform/bus/subjects';
import { WorkersErrors } from '../workers.errors';
import { isInside } from '../../../platform/paths';
import type { JobHandler } from './index';

export interface PlaybackSegmentDeps {
  mediaRoots: string[];
  /** The playback service's segment cache (APP_DATA_DIR/playback-cache): the job writes, playback reads and evicts. */
  cacheDir: string;
  ffmpegPath: string;
  timeoutMs: number;
}

export const failed = (message: string, retryable = true) =>
  retryable ? WorkersErrors.PLAYBACK_FFMPEG_FAILED(message) : WorkersErrors.PLAYBACK_SOURCE_UNREADABLE(message);

/** Runs ffmpeg, killed when `signal` aborts or after `timeoutMs`: its exit code, the signal that ended it, its stderr. */
export async function runFfmpeg(deps: Pick<PlaybackSegmentDeps, 'ffmpegPath' | 'timeoutMs'>, args: string[], signal: AbortSignal) {
  const proc = Bun.spawn([deps.ffmpegPath, ...args], { stdout: 'ignore', stderr: 'pipe' });
  const stop = () => proc.kill('SIGKILL');
  signal.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, deps.timeoutMs);
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  clearTimeout(timer);
  signal.removeEventListener('abort', stop);
  signal.throwIfAborted();
  return { code, stderr, signalCode: proc.signalCode };
}

/** The job's output inside the playback cache; a path that leaves it fails for good. */
export function cachePath(cacheRoot: string, rel: string, what: string): string {
  const output = resolve(cacheRoot, rel);
  if (!isInside(cacheRoot, output) || output === cacheRoot) throw failed(`the ${what} path leaves the cache`, false);
  return output;
}

/** The medium's real path under its media root; one that cannot be read or leaves the root fails for good. */
export function mediaSource(mediaRoots: string[], rootIndex: number, path: string): string {
  const base = mediaRoots[rootIndex];
  if (base === undefined) throw failed(`media root ${rootIndex} is not configured on the worker`, false);
  try {
    const root = realpathSync(base);
    const file = realpathSync(join(root, path));
    if (isInside(root, file)) return file;
  } catch {
    throw failed('the source file cannot be read', false);
  }
  throw failed('the source file leaves its media root', false);
}

/**
 * Makes `output` in a work folder of the job's own attempt (`make` writes the file it is given) and
 * renames it into place once whole, so a reader never sees half of it and a job killed mid-way
 * leaves nothing usable; the folder goes either way.
 */
export async function intoCache(cacheRoot: string, job: { id: string; attempt: number }, output: string, name: string, make: (file: string) => Promise<string>): Promise<void> {
  const work = join(cacheRoot, '.work', `${job.id}-${job.attempt}`);
  mkdirSync(work, { recursive: true });
  try {
    const made = await make(join(work, name));
    mkdirSync(dirname(output), { recursive: true });
    renameSync(made, output);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * ffmpeg's arguments for one segment. Timestamps stay those of the source (-copyts, mpegts_copyts)
 * shifted by a constant 10 s, so consecutive segments join without a gap or an overlap; the segment
 * muxer ends the piece at the next keyframe (B-frames stay with their GOP) and -copypriorss 0 drops
 * the audio packets before the start that an input seek brings along. Boundaries are moved 1 ms
 * earlier, because the index holds whole milliseconds of times that are not.
 */
export function segmentArgs(job: PlaybackSegmentJob, input: string, outPattern: string): string[] {
  const s = Math.max(0, job.startMs - 1) / 1000;
  const e = (job.endMs - 1) / 1000;
  // The encoder's priming would start each segment's audio one frame early: move it back by one AAC frame.
  const aac = ['-af', 'asetpts=PTS+1024/SR/TB', '-c:a', 'aac', '-ac', '2', '-b:a', '128k'];
  const x264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-profile:v', 'high'];
  let streams: string[];
  if (job.audioStream !== undefined) {
    streams = ['-map', `0:${job.audioStream}`, '-vn', ...(job.method === 'copy' ? ['-c:a', 'copy'] : aac)];
  } else if (job.height !== undefined) {
    // A rung: scaled to its height (width even, the ratio kept); level 4.0 holds up to 1080p30.
    const cap = job.videoKbps ? ['-maxrate', `${job.videoKbps}k`, '-bufsize', `${job.videoKbps * 2}k`] : [];
    streams = ['-map', '0:v:0', '-map', '0:a:0?', ...x264, '-level:v', '4.0', ...cap, '-vf', `scale=-2:${job.height}`, ...(job.method === 'copy' ? ['-c:a', 'copy'] : aac)];
  } else {
    const codecs = job.method === 'copy' ? ['-c:v', 'copy', '-c:a', 'copy'] : job.method === 'copy-video' ? ['-c:v', 'copy', ...aac] : [...x264, ...aac];
    streams = ['-map', '0:v:0?', '-map', '0:a:0?', ...codecs];
  }
  return [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-y',
    '-copyts', '-ss', s.toFixed(3), '-i', input, '-to', e.toFixed(3),
    ...streams,
    '-copypriorss', '0', '-avoid_negative_ts', 'disabled', '-output_ts_offset', '10',
    '-f', 'segment', '-segment_times', (e + 10).toFixed(3), '-segment_format', 'mpegts',
    '-segment_format_options', 'mpegts_copyts=1', outPattern,
  ];
}

export function createPlaybackSegmentJob(deps: PlaybackSegmentDeps): JobHandler<'playback.segment'> {
  const cacheRoot = resolve(deps.cacheDir);

  return {
    type: 'playback.segment',
    async run({ job, signal, log }) {
      const p = job.payload;
      const output = cachePath(cacheRoot, p.output, 'segment');
      if (existsSync(output)) return; // made by an earlier job (concurrent requests in several processes)
      const input = mediaSource(deps.mediaRoots, p.root, p.path);
      await intoCache(cacheRoot, job, output, 'piece-%d.ts', async (pattern) => {
        const { code, stderr, signalCode } = await runFfmpeg(deps, segmentArgs(p, input, pattern), signal);
        const first = pattern.replace('%d', '0');
        if (code !== 0 || !existsSync(first)) {
          log.warn('ffmpeg could not make the segment', { code, signal: signalCode, stderr: stderr.slice(0, 400) });
          throw failed(signalCode ? `ffmpeg was stopped (${signalCode}) while making the segment` : 'ffmpeg could not make the segment');
        }
        return first;
      });
    },
  };
}
