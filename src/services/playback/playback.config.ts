// The playback service's own environment, parsed once at start-up.
import { ConfigError, readDirList, readInt, readString, type Env } from '../../platform/config';

/** An http(s) origin the browser is sent to, or '' (derived per request). */
function readOrigin(env: Env, name: string): string {
  const v = readString(env, name, '');
  if (v && !/^https?:\/\/[^/?#]+\/?$/.test(v)) throw new ConfigError(name, 'must be an http:// or https:// origin such as https://catalog.example.com');
  return v.replace(/\/$/, '');
}

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
  /**
   * Where the media web app's page reaches the catalog and identity (APP_MEDIA_APP_CATALOG_URL,
   * APP_MEDIA_APP_IDENTITY_URL): set them behind a proxy; empty, the page's own host name with the
   * service's port.
   */
  appUrls: { catalog: string; identity: string };
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
    appUrls: { catalog: readOrigin(env, 'APP_MEDIA_APP_CATALOG_URL'), identity: readOrigin(env, 'APP_MEDIA_APP_IDENTITY_URL') },
  };
}
