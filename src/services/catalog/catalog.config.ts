// The catalog's own environment: probe bounds. Parsed once; a bad value stops start-up with `VAR: reason`.
import { readBool, readInt, readString, type Env } from '../../platform/config';

export interface CatalogConfig {
  ffprobePath: string | undefined;
  probeConcurrency: number;
  probeSizeBytes: number;
  probeAnalyzeUs: number;
  probeTimeoutMs: number;
  /** Seconds between scheduled scans of every media root; 0: no schedule. */
  libraryScanIntervalS: number;
  /** Watch the media roots and queue a scan of each folder that changes; the quiet period before it. */
  libraryWatch: boolean;
  libraryWatchDebounceMs: number;
}

export function loadCatalogConfig(env: Env = process.env): CatalogConfig {
  return {
    ffprobePath: readString(env, 'APP_FFPROBE_PATH', '') || undefined,
    probeConcurrency: readInt(env, 'APP_PROBE_CONCURRENCY', 2, 1, 64),
    // ffmpeg's defaults are 5 MB / 5 s; Jellyfin raises them to 1 GB. A few MB decide every common container.
    probeSizeBytes: readInt(env, 'APP_PROBE_SIZE', 10_000_000, 32, 2_000_000_000),
    probeAnalyzeUs: readInt(env, 'APP_PROBE_ANALYZE_US', 10_000_000, 0, 600_000_000),
    probeTimeoutMs: readInt(env, 'APP_PROBE_TIMEOUT_MS', 30_000, 100, 600_000),
    libraryScanIntervalS: readInt(env, 'APP_LIBRARY_SCAN_INTERVAL_S', 0, 0, 30 * 86_400),
    libraryWatch: readBool(env, 'APP_LIBRARY_WATCH', false),
    libraryWatchDebounceMs: readInt(env, 'APP_LIBRARY_WATCH_DEBOUNCE_MS', 2000, 10, 600_000),
  };
}
