// The playback service's own environment, parsed once at start-up.
import { readDirList, readInt, type Env } from '../../platform/config';

export interface PlaybackConfig {
  /** APP_MEDIA_ROOTS, the same list (and order) as the catalog's: bindings name a root by index. */
  mediaRoots: string[];
  /** How long a session URL works. */
  sessionTtlS: number;
  /** HLS segment length the cut aims at (boundaries are keyframes, so segments are about this long). */
  segmentTargetMs: number;
  /** Segments made ahead of the one a client asks for. */
  segmentsAhead: number;
  /** The segment cache's size bound; least recently served segments go first. */
  cacheBytes: number;
  /** How long a request waits for its segment's job. */
  segmentWaitMs: number;
  /** Trickplay: one thumbnail every this many seconds. */
  thumbnailIntervalS: number;
}

export function loadPlaybackConfig(env: Env = process.env): PlaybackConfig {
  return {
    mediaRoots: readDirList(env, 'APP_MEDIA_ROOTS'),
    sessionTtlS: readInt(env, 'APP_PLAYBACK_SESSION_TTL_S', 6 * 3600, 60, 7 * 86_400),
    segmentTargetMs: readInt(env, 'APP_PLAYBACK_SEGMENT_MS', 6000, 1000, 60_000),
    segmentsAhead: readInt(env, 'APP_PLAYBACK_AHEAD', 2, 0, 10),
    cacheBytes: readInt(env, 'APP_PLAYBACK_CACHE_BYTES', 2 * 1024 ** 3, 1024 * 1024, Number.MAX_SAFE_INTEGER),
    segmentWaitMs: readInt(env, 'APP_PLAYBACK_SEGMENT_WAIT_MS', 120_000, 1000, 3_600_000),
    thumbnailIntervalS: readInt(env, 'APP_PLAYBACK_THUMBNAIL_INTERVAL_S', 10, 1, 600),
  };
}
