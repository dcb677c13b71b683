// The only place ffprobe runs. Bounded: a cap on concurrent processes, probesize/analyzeduration
// limits, and a timeout after which the process is killed. Nothing else in Keel spawns ffprobe.
import { accessSync, constants } from 'node:fs';
import { AppError } from '../../../platform/errors';

export interface FfprobeOptions {
  /** Binary to run: APP_FFPROBE_PATH, else `ffprobe` on PATH, else the optional npm package's. */
  binary: string;
  concurrency: number;
  probeSizeBytes: number;
  analyzeDurationUs: number;
  timeoutMs: number;
}

export interface FfprobeStreamJson {
  index: number;
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  sample_rate?: string;
  channels?: number;
  bit_rate?: string;
  disposition?: Record<string, number>;
  tags?: Record<string, string>;
}

export interface FfprobeJson {
  format?: { format_name?: string; probe_score?: number; duration?: string; bit_rate?: string; size?: string; nb_streams?: number; tags?: Record<string, string> };
  streams?: FfprobeStreamJson[];
}

/** The ffprobe shipped by the optional npm package, when it installed for this platform. */
function npmFfprobe(): string | undefined {
  try {
    const path = (require('@ffprobe-installer/ffprobe') as { path: string }).path;
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/** Resolves the binary once: an explicit path, else the system ffprobe, else the npm package's. */
export function findFfprobe(explicit: string | undefined, PATH: string | undefined): string {
  if (explicit) return explicit;
  const found = Bun.which('ffprobe', { PATH: PATH ?? '' }) ?? npmFfprobe();
  if (!found) {
    throw new AppError('MEDIA_ENGINE_UNAVAILABLE', 503, 'ffprobe is not installed (install ffmpeg or set APP_FFPROBE_PATH)', {
      retryable: false,
      category: 'recoverable',
    });
  }
  return found;
}

/** A counting semaphore: at most `max` holders, the rest wait in order. */
function semaphore(max: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return {
    async run<T>(fn: () => Promise<T>): Promise<T> {
      if (active >= max) await new Promise<void>((r) => waiting.push(r));
      active++;
      try {
        return await fn();
      } finally {
        active--;
        waiting.shift()?.();
      }
    },
    get active() {
      return active;
    },
  };
}

export type FfprobeResult = { ok: true; stdout: string } | { ok: false; reason: 'timeout' | 'failed'; stderr: string };

export function createFfprobe(opts: FfprobeOptions) {
  const gate = semaphore(opts.concurrency);

  /** Runs ffprobe with `args` then the file; never throws for a file ffprobe cannot read. */
  async function run(args: string[], file: string, timeoutMs = opts.timeoutMs): Promise<FfprobeResult> {
    return gate.run(async () => {
      // `file:` keeps a name that looks like a protocol or an option from being read as one.
      const proc = Bun.spawn([opts.binary, '-v', 'error', ...args, `file:${file}`], {
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        proc.kill('SIGKILL');
      }, timeoutMs);
      try {
        const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
        const code = await proc.exited;
        if (timedOut) return { ok: false, reason: 'timeout', stderr };
        return code === 0 ? { ok: true, stdout } : { ok: false, reason: 'failed', stderr };
      } finally {
        clearTimeout(timer);
      }
    });
  }

  return {
    /** Container and stream facts, within the probe size and analyze duration limits. */
    async formatAndStreams(file: string): Promise<{ ok: true; json: FfprobeJson } | { ok: false; reason: string }> {
      const res = await run(
        ['-probesize', String(opts.probeSizeBytes), '-analyzeduration', String(opts.analyzeDurationUs), '-show_format', '-show_streams', '-of', 'json'],
        file,
      );
      if (!res.ok) return { ok: false, reason: res.reason === 'timeout' ? 'probe timed out' : 'unreadable by ffprobe' };
      try {
        return { ok: true, json: JSON.parse(res.stdout) as FfprobeJson };
      } catch {
        return { ok: false, reason: 'unreadable by ffprobe' };
      }
    },

    /** Keyframe times (ms) of the first video stream from its packets, without decoding. */
    async keyframePacketScan(file: string, frameRate?: number): Promise<number[] | null> {
      const res = await run(
        ['-fflags', '+genpts', '-select_streams', 'v:0', '-show_entries', 'packet=pts_time,dts_time,flags', '-of', 'csv=p=0'],
        file,
      );
      if (!res.ok) return null;
      return parsePacketCsv(res.stdout, frameRate);
    },

    get active() {
      return gate.active;
    },
  };
}

export type Ffprobe = ReturnType<typeof createFfprobe>;

/**
 * Lines `pts_time,dts_time,flags`, one per video packet in decode order. Keeps `K` packets; a packet
 * without pts falls back to its dts. A packet with neither (raw elementary streams such as .h264)
 * is placed by its position and the stream's frame rate when that is known, else skipped: a
 * keyframe table must not break on packets lacking timestamps.
 */
export function parsePacketCsv(csv: string, frameRate?: number): number[] {
  const out: number[] = [];
  let n = -1;
  for (const line of csv.split('\n')) {
    const [pts, dts, flags] = line.trim().split(',');
    if (flags === undefined) continue;
    n++;
    if (!flags.includes('K')) continue;
    let t = pts && pts !== 'N/A' ? Number(pts) : dts && dts !== 'N/A' ? Number(dts) : NaN;
    if (!Number.isFinite(t) && frameRate && frameRate > 0) t = n / frameRate;
    if (Number.isFinite(t)) out.push(Math.round(t * 1000));
  }
  return [...new Set(out)].sort((a, b) => a - b);
}
