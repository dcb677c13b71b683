// The workers service's own environment: runner bounds and the library crawl. Parsed once at start-up.
import { hostname } from 'node:os';
import { ConfigError, readDirList, readInt, readString, type Env } from '../../platform/config';

export interface WorkersConfig {
  /** APP_MEDIA_ROOTS, the same list (and order) as the catalog's: a scan job walks them. */
  mediaRoots: string[];
  /**
   * APP_WORKERS_QUEUE: where jobs wait. `jetstream`: a JetStream work-queue stream that workers on
   * every machine share (needs a nats:// APP_BUS with JetStream); `database`: the workers_jobs table,
   * shared by processes on one database; `auto` (default): JetStream when the NATS server has it,
   * else the database, as durable events do.
   */
  queue: 'auto' | 'database' | 'jetstream';
  /** This worker's name in job leases (several processes may share one database). */
  workerId: string;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Library scan: probes at once per media root, files per batch, wait for one probe. */
  probesPerRoot: number;
  batchSize: number;
  indexTimeoutMs: number;
  /** Playback segments: the ffmpeg binary and how long one segment may take. */
  ffmpegPath: string;
  segmentTimeoutMs: number;
}

export function loadWorkersConfig(env: Env = process.env): WorkersConfig {
  const random = Buffer.from(crypto.getRandomValues(new Uint8Array(4))).toString('hex');
  const nats = (env.APP_BUS ?? '').startsWith('nats://');
  const given = readString(env, 'APP_WORKERS_QUEUE', 'auto');
  if (given !== 'auto' && given !== 'database' && given !== 'jetstream') throw new ConfigError('APP_WORKERS_QUEUE', 'must be auto, database or jetstream');
  if (given === 'jetstream' && !nats) throw new ConfigError('APP_WORKERS_QUEUE', 'jetstream needs APP_BUS to be a nats:// URL');
  const queue = given === 'auto' && !nats ? 'database' : given;
  return {
    queue,
    mediaRoots: readDirList(env, 'APP_MEDIA_ROOTS'),
    workerId: readString(env, 'APP_WORKER_ID', `${hostname()}-${process.pid}-${random}`),
    concurrency: readInt(env, 'APP_WORKERS_CONCURRENCY', 2, 1, 64),
    leaseMs: readInt(env, 'APP_WORKERS_LEASE_MS', 30_000, 500, 3_600_000),
    pollMs: readInt(env, 'APP_WORKERS_POLL_MS', 1000, 10, 60_000),
    retryBaseMs: readInt(env, 'APP_WORKERS_RETRY_BASE_MS', 5000, 0, 3_600_000),
    retryMaxMs: readInt(env, 'APP_WORKERS_RETRY_MAX_MS', 300_000, 0, 86_400_000),
    probesPerRoot: readInt(env, 'APP_LIBRARY_PROBES_PER_ROOT', 2, 1, 64),
    // Capped so a batch of long paths stays well under NATS's 1 MB message limit.
    batchSize: readInt(env, 'APP_LIBRARY_BATCH', 500, 1, 2000),
    indexTimeoutMs: readInt(env, 'APP_LIBRARY_INDEX_TIMEOUT_MS', 120_000, 1000, 3_600_000),
    ffmpegPath: readString(env, 'APP_FFMPEG_PATH', 'ffmpeg'),
    segmentTimeoutMs: readInt(env, 'APP_PLAYBACK_SEGMENT_TIMEOUT_MS', 120_000, 1000, 3_600_000),
  };
}
