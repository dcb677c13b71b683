// The subject map of CONTRACT.md: every query's request/reply and every event's payload.
// Types only, so any service can speak a subject without importing the service that owns it; a
// shape that is also an HTTP body is declared once as t.* in *-shapes.ts and its type used here.
import type { Jwks } from './identity-shapes';
import type { LibraryScanAccepted, LibraryScanCounts, LibraryScanRequest, SourceBinding } from './library-shapes';
import type { Identification, MediaTags, ProbeFacts, ProbeStream } from './media-shapes';

export type { LibraryScanAccepted, LibraryScanCounts, LibraryScanRequest, LibraryScanStatus, SourceBinding } from './library-shapes';

/** Why a session stopped being live (reply of qry.identity.session). */
export type IdentitySessionEndReason =
  | 'unknown-session'
  | 'session-revoked'
  | 'session-expired'
  | 'refresh-reuse'
  | 'key-rotated'
  | 'policies-changed'
  | 'actor-disabled';

export interface BusQueries {
  /**
   * Probe a file under a media root (answered by the catalog's media engine). `root` is the index in
   * APP_MEDIA_ROOTS, `path` relative to it; the answerer confines it again. A file that is not a
   * medium is a normal reply (`medium: false` with a short reason), not an error. Errors:
   * CATALOG_PATH_REFUSED (422), CATALOG_PATH_NOT_FOUND (404), CATALOG_FILE_UNREADABLE (422),
   * MEDIA_PROBE_TIMEOUT (504, retryable).
   */
  'qry.media.probe': {
    request: { root: number; path: string };
    reply:
      | { medium: true; sizeBytes: number; fastHash: string; facts: ProbeFacts; tags?: MediaTags }
      | { medium: false; sizeBytes: number; fastHash: string; reason: string };
  };
  /**
   * The best place an asset can be read from (answered by the sources service; rules in docs/library.md).
   * An asset with no binding is a normal reply: `available: false, binding: null`.
   */
  'qry.sources.resolve': {
    request: { assetId: string };
    reply: { assetId: string; available: boolean; binding: SourceBinding | null };
  };
  /**
   * What playback needs of an asset (answered by the catalog): its MediaIndex facts and keyframe
   * index. An unknown asset is a normal reply (`found: false`); an asset without a MediaIndex answers
   * `indexed: false` with empty facts.
   */
  'qry.catalog.playable': {
    request: { assetId: string };
    reply: PlayableAsset;
  };
  /** Queue a job on the workers service; a pending job with the same key is returned instead (deduplicated). */
  'cmd.workers.submit': {
    request: JobSubmission;
    reply: { job: JobView; deduplicated: boolean };
  };
  /** Cancel a job: a queued job ends at once, a running one at its worker's next heartbeat. Error: WORKERS_JOB_NOT_FOUND. */
  'cmd.workers.cancel': { request: { id: string }; reply: { job: JobView } };
  /** One job as the workers service holds it. Error: WORKERS_JOB_NOT_FOUND. */
  'qry.workers.job': { request: { id: string }; reply: { job: JobView } };
  /** Start a library scan (answered by the catalog): the bus twin of POST /library/scans. */
  'cmd.library.scan': { request: LibraryScanRequest; reply: LibraryScanAccepted };
  /** Scan job -> catalog: the attempt begins (status running). */
  'cmd.library.begin': { request: { scanId: string }; reply: { ok: true } };
  /**
   * Scan job -> catalog: one batch of walked files. The catalog marks unchanged files (same size and
   * mtime) as seen and available, and answers the paths that need a probe (new or changed).
   */
  'cmd.library.compare': {
    request: { scanId: string; root: number; files: LibraryFileStat[] };
    reply: { probe: LibraryFileStat[]; unchanged: number; returned: number };
  };
  /** Scan job -> catalog: probe and index one new or changed file through the catalog's scan path. */
  'cmd.library.index': {
    request: { scanId: string; root: number; file: LibraryFileStat };
    reply: { outcome: 'added' | 'changed' | 'failed'; assetId: string | null; reason?: string };
  };
  /**
   * Scan job -> catalog: the walk of `folder` on `root` is complete. Known files under it that this scan
   * did not see (outside `skipped` folders that could not be read) are marked unavailable.
   */
  'cmd.library.sweep': {
    request: { scanId: string; root: number; folder: string; skipped: string[] };
    reply: { offline: number };
  };
  /** Scan job -> catalog: the scan is over; the counts are frozen. */
  'cmd.library.finish': { request: { scanId: string }; reply: { counts: LibraryScanCounts } };
  /**
   * Is this session live? Asked by every Bearer guard after the local signature check.
   * `live: false, reauth: true`: the session ended for `reason`; a new POST /sessions with a valid
   * API key fixes it. `live: false, reauth: false`: no such session for this actor.
   * `policies` is the actor's current policy list when live.
   */
  'qry.identity.session': {
    request: { sid: string; sub: string };
    reply: { live: boolean; reauth: boolean; reason?: IdentitySessionEndReason; policies?: string[] };
  };
  /** The public keys that verify access tokens (the body of /.well-known/jwks.json), for guards on the bus. */
  'qry.identity.jwks': {
    request: Record<string, never>;
    reply: Jwks;
  };
}

/** An asset as playback sees it (reply of qry.catalog.playable). */
export interface PlayableAsset {
  assetId: string;
  found: boolean;
  indexed: boolean;
  container: string;
  durationMs: number;
  bitrateBps: number;
  /** Keyframe presentation times of the first video stream in ms, ascending (Matroska Cues, MP4 stss). */
  keyframesMs: number[];
  /** Stream languages as ISO 639-2/T (`eng`, `fra`; `und` when unknown). */
  streams: ProbeStream[];
  /** Subtitle files beside the medium, relative to its root (the binding's): played as WebVTT renditions. */
  subtitleFiles: { language: string; format: string; path: string }[];
}

/** One HLS segment to make: [startMs, endMs) of the file at `root`/`path`, written to `output` (relative to the segment cache). */
export interface PlaybackSegmentJob {
  assetId: string;
  root: number;
  path: string;
  index: number;
  startMs: number;
  endMs: number;
  /**
   * `copy`: the streams are H.264/AAC already; `copy-video`: H.264 copied, the audio (AC-3, DTS,
   * TrueHD, ...) to AAC; `transcode`: both to H.264/AAC.
   */
  method: 'copy' | 'copy-video' | 'transcode';
  /** An audio rendition: this audio stream (its index in the file) alone, copied if AAC (`method`), else to AAC. */
  audioStream?: number;
  /** A rung of the ladder: the first video stream scaled to this height (H.264), with the first audio stream. */
  height?: number;
  /** A rung's video bitrate cap in kbit/s (-maxrate; the buffer is twice it). */
  videoKbps?: number;
  output: string;
}

/** A WebVTT rendition of a subtitle: the embedded stream `stream` of the file at `root`/`path`, or the sidecar file `file` on that root. */
export interface PlaybackSubtitlesJob {
  assetId: string;
  root: number;
  path: string;
  stream?: number;
  file?: string;
  output: string;
}

/** A trickplay sprite of the file at `root`/`path`: a thumbnail every `intervalS`, `columns` x `rows`, each `width` x `height`. */
export interface PlaybackThumbnailsJob {
  assetId: string;
  root: number;
  path: string;
  intervalS: number;
  width: number;
  height: number;
  columns: number;
  rows: number;
  output: string;
}

/** What one library scan walks: a folder ('' for all of it) on a media root, by index. */
export interface ScanTarget {
  root: number;
  folder: string;
}

/** The job types of the workers service and their payloads; jobs/ has exactly one handler per type (checked at boot). */
export interface WorkerJobs {
  /** Walk each target's folder and bring the catalog in line (docs/library.md). */
  'library.scan': { scanId: string; targets: ScanTarget[] };
  /** Make one HLS segment of an asset with ffmpeg into the playback cache (docs/playback.md). */
  'playback.segment': PlaybackSegmentJob;
  /** Make the trickplay sprite of an asset into the playback cache (docs/playback.md). */
  'playback.thumbnails': PlaybackThumbnailsJob;
  /** Make the WebVTT of one subtitle of an asset into the playback cache (docs/playback.md). */
  'playback.subtitles': PlaybackSubtitlesJob;
}
export type JobType = keyof WorkerJobs;
export const JOB_TYPES = ['library.scan', 'playback.segment', 'playback.thumbnails', 'playback.subtitles'] as const satisfies readonly JobType[];

export type JobStatus = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';

export type JobSubmission = {
  [T in JobType]: {
    type: T;
    payload: WorkerJobs[T];
    /** One pending (queued) job per key: submitting the same key again returns that job. */
    key?: string;
    /** Attempts before the job fails for good (default 3). */
    maxAttempts?: number;
    /**
     * Whose job it is (1 to 128 characters, default: the job type). On JetStream, workers take the
     * tenants with waiting jobs in turn, so one tenant's backlog does not hold up the others.
     */
    tenant?: string;
  };
}[JobType];

export interface JobProgress {
  /** Free-form figures of the job (a scan: seen, probed, ...). */
  [figure: string]: number;
}

export interface JobView {
  id: string;
  type: JobType;
  key: string | null;
  status: JobStatus;
  attempts: number;
  maxAttempts: number;
  progress: JobProgress;
  error: string | null;
  cancelRequested: boolean;
  payload: WorkerJobs[JobType];
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/** A file as the crawl saw it: path relative to its root, size and mtime (ms). */
export interface LibraryFileStat {
  path: string;
  sizeBytes: number;
  mtimeMs: number;
}

export interface WorkspaceEventPayload {
  /** Unique per event, the same on every delivery of it (at least once): consumers act once per id. */
  eventId: string;
  event: string;
  timestamp: string;
  owner: string;
  workspace: { id: string; name: string; status: string; reason?: string };
}

export interface BusEvents {
  /** Published by the catalog after a scan commits an asset with its MediaIndex (not for a non-medium). */
  'evt.catalog.assetIndexed': {
    /** Unique per event, the same on every delivery of it (at least once): consumers act once per id. */
    eventId: string;
    assetId: string;
    editionId: string;
    /** Null while the asset is unidentified (its edition has no work). */
    workId: string | null;
    /** Index of the media root in APP_MEDIA_ROOTS, and the path relative to it (symlinks resolved). */
    root: number;
    path: string;
    identification: Identification;
    indexed: true;
    indexVersion: number;
    /** True when a rescan found different content (fastHash or size) at the same path. */
    replaced: boolean;
    container: string;
    durationMs: number;
    fastHash: string;
    capabilities: string[];
    /** Unix epoch milliseconds. */
    at: number;
  };
  /** Published by the catalog when a library scan finds a known file gone (false) or back (true). */
  'evt.catalog.assetAvailability': { assetId: string; root: number; path: string; available: boolean; at: number };
  /** Every state change and progress step of a job (durable on NATS: a restart loses none). */
  'evt.workers.jobProgress': { job: JobView; at: number };
  /**
   * Published by identity when the set of published signing keys changes (a rotation, a retired key
   * leaving the JWKS) and at its start: `kids` is the whole set now. Verifiers drop any key not in it.
   */
  'evt.identity.keysChanged': { kids: string[]; at: number };
  'evt.workspace.created': WorkspaceEventPayload;
  'evt.workspace.started': WorkspaceEventPayload;
  'evt.workspace.stopped': WorkspaceEventPayload;
  'evt.workspace.restarted': WorkspaceEventPayload;
  'evt.workspace.deleted': WorkspaceEventPayload;
  'evt.workspace.failed': WorkspaceEventPayload;
  'evt.workspace.paused': WorkspaceEventPayload;
  'evt.workspace.resumed': WorkspaceEventPayload;
}

/** The workspace events, each written with the state change it reports (workspaces' outbox). */
export const WORKSPACE_EVENTS = [
  'evt.workspace.created',
  'evt.workspace.started',
  'evt.workspace.stopped',
  'evt.workspace.restarted',
  'evt.workspace.deleted',
  'evt.workspace.failed',
  'evt.workspace.paused',
  'evt.workspace.resumed',
] as const satisfies readonly (keyof BusEvents)[];

/**
 * Events that must survive a restart: on NATS they go through JetStream (stored, acknowledged,
 * redelivered to durable consumers); in process they are plain events. Those with an `eventId` are
 * written to their service's outbox in the transaction of their change (platform/bus/event-outbox.ts).
 */
export const DURABLE_EVENTS = [
  'evt.catalog.assetIndexed',
  'evt.catalog.assetAvailability',
  'evt.workers.jobProgress',
  ...WORKSPACE_EVENTS,
] as const satisfies readonly (keyof BusEvents)[];
