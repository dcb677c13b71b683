// The catalog's own environment: media roots and probe bounds. Parsed once; a bad value stops
// start-up with `VAR: reason`.
import { readBool, readDirList, readInt, readString, type Env } from '../../platform/config';
import type { RateLimitSpec } from '../../platform/http/bearer-guard';

export interface CatalogConfig {
  /** APP_MEDIA_ROOTS: absolute directories, `:`-separated; a scan path is relative to one of them. */
  mediaRoots: string[];
  ffprobePath: string | undefined;
  probeConcurrency: number;
  /** APP_PROBE_QUEUE: probes that may wait for an ffprobe process; past it, 503 MEDIA_ENGINE_BUSY. */
  probeQueue: number;
  probeSizeBytes: number;
  probeAnalyzeUs: number;
  probeTimeoutMs: number;
  /** APP_FFMPEG_PATH: the ffmpeg that takes covers out of media and resizes images (?width=). */
  ffmpegPath: string;
  /** Images made at the same time (covers, resizes); more wait. */
  imageConcurrency: number;
  /** POST /scan: the media spec's 5/s with a burst of 20 per actor; the service-wide 50/s, burst 100, is ours. */
  scanBudget: RateLimitSpec;
  /** Seconds between scheduled scans of every media root; 0: no schedule. */
  libraryScanIntervalS: number;
  /** Watch the media roots and queue a scan of each folder that changes; the quiet period before it. */
  libraryWatch: boolean;
  libraryWatchDebounceMs: number;
}

export function loadCatalogConfig(env: Env = process.env): CatalogConfig {
  return {
    mediaRoots: readDirList(env, 'APP_MEDIA_ROOTS'),
    ffprobePath: readString(env, 'APP_FFPROBE_PATH', '') || undefined,
    probeConcurrency: readInt(env, 'APP_PROBE_CONCURRENCY', 2, 1, 64),
    probeQueue: readInt(env, 'APP_PROBE_QUEUE', 64, 0, 100_000),
    // ffmpeg's defaults are 5 MB / 5 s; Jellyfin raises them to 1 GB. A few MB decide every common container.
    probeSizeBytes: readInt(env, 'APP_PROBE_SIZE', 10_000_000, 32, 2_000_000_000),
    probeAnalyzeUs: readInt(env, 'APP_PROBE_ANALYZE_US', 10_000_000, 0, 600_000_000),
    probeTimeoutMs: readInt(env, 'APP_PROBE_TIMEOUT_MS', 30_000, 100, 600_000),
    ffmpegPath: readString(env, 'APP_FFMPEG_PATH', 'ffmpeg'),
    imageConcurrency: readInt(env, 'APP_IMAGE_CONCURRENCY', 2, 1, 64),
    scanBudget: { perActor: { ratePerSec: 5, burst: 20 }, service: { ratePerSec: 50, burst: 100 } },
    libraryScanIntervalS: readInt(env, 'APP_LIBRARY_SCAN_INTERVAL_S', 0, 0, 30 * 86_400),
    libraryWatch: readBool(env, 'APP_LIBRARY_WATCH', false),
    libraryWatchDebounceMs: readInt(env, 'APP_LIBRARY_WATCH_DEBOUNCE_MS', 2000, 10, 600_000),
  };
}
