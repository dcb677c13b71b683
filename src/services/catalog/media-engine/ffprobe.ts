// The only place ffprobe runs. Bounded: a cap on concurrent processes and on probes waiting for one
// (past it: 503 MEDIA_ENGINE_BUSY at once), probesize/analyzeduration limits, and a timeout after
// which the process is killed. Nothing else in Keel spawns ffprobe.
// Confined: ffprobe reads the one file it is given (see `demuxerWhitelist`), nothing it points to.
import { accessSync, constants } from 'node:fs';
import { CatalogErrors } from '../catalog.errors';
import { createBoundedQueue } from '../../../platform/bounded-queue';

export interface FfprobeOptions {
  /** Binary to run: APP_FFPROBE_PATH, else `ffprobe` on PATH, else the optional npm package's. */
  binary: string;
  concurrency: number;
  /** Probes that may wait for a process (APP_PROBE_QUEUE, default 64); one more is refused with 503. */
  maxWaiting?: number;
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
  profile?: string;
  level?: number;
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
  if (!found) throw unavailable('ffprobe is not installed (install ffmpeg or set APP_FFPROBE_PATH)');
  return found;
}

const busy = () =>
  CatalogErrors.MEDIA_ENGINE_BUSY('too many probes are running or waiting (APP_PROBE_CONCURRENCY, APP_PROBE_QUEUE); retry later');
const unavailable = (message: string) => CatalogErrors.MEDIA_ENGINE_UNAVAILABLE(message);

/**
 * Demuxers that open other files or URLs named inside the probed file: playlists (hls), concat
 * scripts, manifests (dash, imf), session descriptions (sdp, rtsp, rtp, sap), and script demuxers
 * that run code (avisynth, vapoursynth). A playlist in a media root would otherwise let ffprobe read,
 * and Keel report on, a file outside every root, or reach a host on the network.
 */
const REFERENCING_DEMUXERS = new Set(['hls', 'applehttp', 'concat', 'dash', 'imf', 'sdp', 'rtsp', 'rtp', 'sap', 'avisynth', 'vapoursynth']);

/**
 * `-format_whitelist` for this binary: every demuxer it has but the referencing ones. ffprobe takes
 * only a whitelist, so the list is read from `ffprobe -demuxers` (lines like ` D  mov,mp4,... QuickTime`).
 */
export async function demuxerWhitelist(binary: string): Promise<string> {
  const proc = Bun.spawn([binary, '-hide_banner', '-demuxers'], { stdin: 'ignore', stdout: 'pipe', stderr: 'ignore' });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const names = out
    .split('\n')
    .map((line) => /^\s*D[E.\s]?[d.\s]?\s+(\w\S*)\s/.exec(line)?.[1])
    .filter((n): n is string => n !== undefined && !n.split(',').some((alias) => REFERENCING_DEMUXERS.has(alias)));
  if (code !== 0 || names.length === 0) throw unavailable('ffprobe did not list its demuxers');
  return names.join(',');
}

export type FfprobeResult = { ok: true; stdout: string } | { ok: false; reason: 'timeout' | 'failed'; stderr: string };

export function createFfprobe(opts: FfprobeOptions) {
  const gate = createBoundedQueue({ concurrency: opts.concurrency, maxWaiting: opts.maxWaiting ?? 64 });
  // Read once; a failed read is tried again by the next probe.
  let formats: Promise<string> | undefined;
  const allowedFormats = () => (formats ??= demuxerWhitelist(opts.binary).catch((e) => {
    formats = undefined;
    throw e;
  }));

  /** Runs ffprobe with `args` then the file; never throws for a file ffprobe cannot read. */
  async function run(args: string[], file: string, timeoutMs = opts.timeoutMs): Promise<FfprobeResult> {
    const allowed = await allowedFormats();
    // A full queue is refused at once: a flood of probes must not grow memory or wait without end.
    const ticket = gate.admit();
    if (!ticket) throw busy();
    return ticket.run(async () => {
      // `file:` keeps a name that looks like a protocol or an option from being read as one; the
      // protocol whitelist keeps every demuxer off the network and off pipes, data: and the like.
      const confined = ['-protocol_whitelist', 'file', '-format_whitelist', allowed];
      const proc = Bun.spawn([opts.binary, '-v', 'error', ...confined, ...args, `file:${file}`], {
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
      return gate.running;
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
