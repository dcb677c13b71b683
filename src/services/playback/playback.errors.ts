// The codes the playback service answers with beyond the platform's; the problem+json renderer and
// the OpenAPI description both read this table.
import { defineErrors, errorFactories, joinErrors } from '../../platform/errors';
import { operationsFor } from '../../platform/http/openapi-errors';
import { busErrorTable, problemErrorTable } from '../../platform/platform.errors';

const own = defineErrors({
  PLAYBACK_ASSET_NOT_FOUND: { status: 404, description: 'no such asset in the catalog' },
  // A forged, altered or expired URL, or one of the other mode: all alike, so a caller learns nothing.
  PLAYBACK_SESSION_NOT_FOUND: { status: 404, description: 'no such playback session, or its URL has expired' },
  // A URL that worked and was ended early: the player is told to stop, not that it mistyped.
  PLAYBACK_SESSION_ENDED: { status: 410, description: 'the playback session was ended (DELETE /sessions/{id}) or the identity session that opened it is no longer live' },
  PLAYBACK_SEGMENT_NOT_FOUND: { status: 404, description: 'no such segment in the playlist' },
  PLAYBACK_RENDITION_NOT_FOUND: { status: 404, description: 'no such rendition (ladder rung, audio or subtitle) in the master playlist' },
  PLAYBACK_THUMBNAILS_NOT_FOUND: { status: 404, description: 'the asset has no video to make thumbnails of' },
  PLAYBACK_NO_CAPABILITIES: { status: 409, description: 'the asset has indexed=false: there is nothing to play' },
  PLAYBACK_SOURCE_UNAVAILABLE: { status: 409, category: 'recoverable', description: 'no readable copy of the asset is available now' },
  PLAYBACK_SEGMENT_FAILED: { status: 503, retryAfter: 1, description: 'the workers job could not make the segment or sprite; ask again' },
});

export const playbackErrorTable = joinErrors(problemErrorTable, busErrorTable, own);

/** What the service throws: one factory per code (`PlaybackErrors.X(message, details)`), no HTTP in them. */
export const PlaybackErrors = errorFactories(playbackErrorTable);

/** A route's operationId and the codes it answers beyond the platform's (spread into its `detail`). */
export const playbackOperation = operationsFor(playbackErrorTable);
