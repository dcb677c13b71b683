// The media engine's answer to qry.media.probe: facts of a real ffprobe run, keyframes and the
// fastHash for a file under a media root. A file that is not a medium is a normal answer.
import { extname } from 'node:path';
import type { Bus } from '../../../platform/bus/bus';
import { STREAM_TYPES, type ProbeFacts, type ProbeStream } from '../../../platform/bus/media-shapes';
import type { BusQueries } from '../../../platform/bus/subjects';
import { checkRelativePath, fileUnreadable, pathNotFound, pathRefused, resolveOnRoot } from '../paths';
import { capabilitiesOf } from './capabilities';
import { fastHash } from './fast-hash';
import type { Ffprobe, FfprobeJson, FfprobeStreamJson } from './ffprobe';
import { keyframes } from './keyframes';
import { openByteSource, type ByteSource } from './file-reader';
import { NOT_MP4_OR_MATROSKA, nativeProbeWhy } from './native-probe';
import type { Logger } from '../../../platform/runtime';
import { mediaTagsOf } from '../metadata/local-metadata';
import { CatalogErrors, catalogErrorTable } from '../catalog.errors';

type ProbeReply = BusQueries['qry.media.probe']['reply'];

/** A 5xx AppError: retryable and transient. */
export const probeTimeout = () => CatalogErrors.MEDIA_PROBE_TIMEOUT('ffprobe did not finish within APP_PROBE_TIMEOUT_MS; retry later');

/** Our container name from ffprobe's demuxer list, refined by the brand or the extension. */
export function containerName(formatName: string, file: string, majorBrand?: string): string {
  const ext = extname(file).slice(1).toLowerCase();
  if (formatName === 'matroska,webm') return ext === 'webm' ? 'webm' : 'mkv';
  if (formatName.startsWith('mov,mp4')) {
    if (majorBrand?.trim() === 'qt') return 'mov';
    return ext === 'm4a' || majorBrand?.trim() === 'M4A' ? 'm4a' : 'mp4';
  }
  return formatName.split(',')[0]!;
}

const num = (v: string | number | undefined): number | null => {
  const n = Number(v);
  return v === undefined || v === '' || !Number.isFinite(n) ? null : n;
};

function frameRate(s: FfprobeStreamJson): number | undefined {
  for (const r of [s.avg_frame_rate, s.r_frame_rate]) {
    const [a, b] = (r ?? '').split('/').map(Number);
    if (a && b) return Math.round((a / b) * 1000) / 1000;
  }
  return undefined;
}

// ffmpeg's AVPROBE_SCORE_RETRY: at or below it ffmpeg itself warns "misdetection possible".
const LOW_PROBE_SCORE = 25;
// Demuxers that open any text or a still image: what they find is not a medium.
const NOT_MEDIA_FORMATS = new Set(['tty', 'image2', 'lrc', 'srt', 'ass', 'webvtt', 'subviewer', 'jacosub', 'microdvd']);

export function toStream(s: FfprobeStreamJson): ProbeStream {
  const type = STREAM_TYPES.find((known) => known === s.codec_type) ?? 'unknown';
  const out: ProbeStream = {
    index: s.index,
    type,
    codec: s.codec_name ?? 'unknown',
    language: s.tags?.language ?? 'und',
    defaultFlag: s.disposition?.default === 1,
    bitRateBps: num(s.bit_rate) ?? (s.tags?.BPS ? num(s.tags.BPS) : null),
  };
  if (type === 'audio') {
    out.channels = s.channels ?? 0;
    out.sampleRate = num(s.sample_rate) ?? 0;
  }
  if (type === 'video') {
    out.frameRate = frameRate(s) ?? 0;
    out.width = s.width ?? 0;
    out.height = s.height ?? 0;
    if (s.profile) out.profile = s.profile;
    if (typeof s.level === 'number' && s.level > 0) out.level = s.level;
  }
  return out;
}

/** Medium or not: at least one playable audio or video stream in a real media container. */
export function mediumVerdict(json: FfprobeJson): string | null {
  const format = json.format?.format_name ?? '';
  const streams = json.streams ?? [];
  if (!format) return 'no container recognised';
  if (NOT_MEDIA_FORMATS.has(format) || format.endsWith('_pipe')) return 'a text or still-image file';
  // A file of zeros passes for Nintendo ADPCM with a score that low.
  const score = json.format?.probe_score;
  if (typeof score === 'number' && score <= LOW_PROBE_SCORE) return 'no container recognised with confidence';
  const av = streams.filter((s) => (s.codec_type === 'audio' || (s.codec_type === 'video' && s.disposition?.attached_pic !== 1)));
  if (av.length === 0) return 'no audio or video stream';
  return null;
}

/**
 * Format and streams of a file: from the container's own headers when the native reader is sure
 * (MP4 and Matroska with the codecs it knows), else from ffprobe.
 */
async function formatAndStreams(file: string, ffprobe: Ffprobe, native: boolean, log?: Logger): ReturnType<Ffprobe['formatAndStreams']> {
  if (native) {
    let src: ByteSource | undefined;
    try {
      src = await openByteSource(file);
      const verdict = await nativeProbeWhy(src);
      if (verdict.json) return { ok: true, json: verdict.json };
      // Which rule sent an MP4 or Matroska file to ffprobe (the reason, never the path).
      if (verdict.why !== NOT_MP4_OR_MATROSKA) log?.debug('media probe: native reader unsure, ffprobe asked', { why: verdict.why });
    } catch {
      // Unreadable here too: ffprobe gives its own verdict.
    } finally {
      await src?.close().catch(() => {});
    }
  }
  return ffprobe.formatAndStreams(file);
}

export function createProbeAnswerer(deps: {
  mediaRoots: string[];
  ffprobe: Ffprobe;
  /** Off: ffprobe answers every file (the tests compare the two). */
  native?: boolean;
  log?: Logger;
}) {
  const native = deps.native ?? true;
  async function probe(request: BusQueries['qry.media.probe']['request']): Promise<ProbeReply> {
    // The bus is a boundary of its own: check the shape and confine again, whoever asks.
    if (typeof request?.path !== 'string' || !Number.isInteger(request.root) || request.root < 0) {
      throw pathRefused('the probe request needs a root index and a relative path');
    }
    const rel = checkRelativePath(request.path);
    const resolved = resolveOnRoot(deps.mediaRoots, request.root, rel);
    if (!resolved) throw pathNotFound();
    const file = resolved.absPath;
    let hashed: Awaited<ReturnType<typeof fastHash>>;
    try {
      hashed = await fastHash(file);
    } catch (e) {
      // Gone since it was located, or not readable by this process.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw pathNotFound();
      throw fileUnreadable();
    }
    const { hash, sizeBytes } = hashed;
    if (sizeBytes === 0) return { medium: false, sizeBytes, fastHash: hash, reason: 'empty file' };
    const probed = await formatAndStreams(file, deps.ffprobe, native, deps.log);
    // A timeout says nothing about the file: a retryable problem, so an index is never lost to a busy machine.
    if (!probed.ok && probed.reason === 'probe timed out') throw probeTimeout();
    if (!probed.ok) return { medium: false, sizeBytes, fastHash: hash, reason: probed.reason };
    const verdict = mediumVerdict(probed.json);
    if (verdict) return { medium: false, sizeBytes, fastHash: hash, reason: verdict };

    const format = probed.json.format!;
    const container = containerName(format.format_name!, file, format.tags?.major_brand);
    const streams = (probed.json.streams ?? []).map(toStream);
    const durationMs = Math.round((num(format.duration) ?? 0) * 1000);
    const bitrateBps = num(format.bit_rate) ?? (durationMs > 0 ? Math.round((sizeBytes * 8 * 1000) / durationMs) : 0);
    const video = streams.find((s) => s.type === 'video');
    const kf = await keyframes(file, container, video ? (video.frameRate ?? 0) : null, deps.ffprobe);
    const facts: ProbeFacts = {
      container,
      bitrateBps,
      durationMs,
      streams,
      capabilities: capabilitiesOf(container, durationMs, streams, kf.ms),
      keyframesMs: kf.ms,
      keyframeSource: kf.source,
    };
    return { medium: true, sizeBytes, fastHash: hash, facts, tags: mediaTagsOf(format.tags, probed.json.streams ?? []) };
  }

  return {
    probe,
    /** Registers the answerer; returns the function that unregisters it. */
    listen: (bus: Bus) => bus.answer('qry.media.probe', probe, catalogErrorTable),
  };
}
