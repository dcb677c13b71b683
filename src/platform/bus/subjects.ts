// The subject map of CONTRACT.md: every query's request/reply and every event's payload.
// Types only, so any service can speak a subject without importing the service that owns it; a
// shape that is also an HTTP body is declared once as t.* in media-shapes.ts and its type used here.
import type { Jwks } from './identity-shapes';
import type { Identification, ProbeFacts } from './media-shapes';

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
      | { medium: true; sizeBytes: number; fastHash: string; facts: ProbeFacts }
      | { medium: false; sizeBytes: number; fastHash: string; reason: string };
  };
  'qry.sources.resolve': {
    request: { assetId: string; actor?: string };
    reply: { assetId: string; bindings: { id: string; sourceId: string; locator: string; available: boolean }[] };
  };
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

export interface WorkspaceEventPayload {
  event: string;
  timestamp: string;
  owner: string;
  workspace: { id: string; name: string; status: string; reason?: string };
}

export interface BusEvents {
  /** Published by the catalog after a scan commits an asset with its MediaIndex (not for a non-medium). */
  'evt.catalog.assetIndexed': {
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
  'evt.workspace.created': WorkspaceEventPayload;
  'evt.workspace.started': WorkspaceEventPayload;
  'evt.workspace.stopped': WorkspaceEventPayload;
  'evt.workspace.restarted': WorkspaceEventPayload;
  'evt.workspace.deleted': WorkspaceEventPayload;
  'evt.workspace.failed': WorkspaceEventPayload;
}
