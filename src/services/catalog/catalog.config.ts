// The catalog's own environment: probe bounds. Parsed once; a bad value stops start-up with `VAR: reason`.
import { readInt, readString, type Env } from '../../platform/config';
import type { RateLimitSpec } from '../../platform/http/bearer-guard';

export interface CatalogConfig {
  ffprobePath: string | undefined;
  probeConcurrency: number;
  probeSizeBytes: number;
  probeAnalyzeUs: number;
  probeTimeoutMs: number;
  /** POST /scan: the media spec's 5/s with a burst of 20 per actor; the service-wide 50/s, burst 100, is ours. */
  scanBudget: RateLimitSpec;
}

export function loadCatalogConfig(env: Env = process.env): CatalogConfig {
  return {
    ffprobePath: readString(env, 'APP_FFPROBE_PATH', '') || undefined,
    probeConcurrency: readInt(env, 'APP_PROBE_CONCURRENCY', 2, 1, 64),
    // ffmpeg's defaults are 5 MB / 5 s; Jellyfin raises them to 1 GB. A few MB decide every common container.
    probeSizeBytes: readInt(env, 'APP_PROBE_SIZE', 10_000_000, 32, 2_000_000_000),
    probeAnalyzeUs: readInt(env, 'APP_PROBE_ANALYZE_US', 10_000_000, 0, 600_000_000),
    probeTimeoutMs: readInt(env, 'APP_PROBE_TIMEOUT_MS', 30_000, 100, 600_000),
    scanBudget: { perActor: { ratePerSec: 5, burst: 20 }, service: { ratePerSec: 50, burst: 100 } },
  };
}
