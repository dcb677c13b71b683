// Watch state over HTTP, behind the Bearer guard (policy resource:asset:play): each actor sees and
// writes only their own.
import { Elysia } from 'elysia';
import { GUARD_CODES, type BearerGuard } from '../../../platform/http/bearer-guard';
import { playbackOperation as op } from '../playback.errors';
import { ProgressAssetParams, ProgressItemResponse, ProgressListQuery, ProgressListResponse, PutProgressBody } from './progress.model';
import type { ProgressService } from './progress.service';

export function progressRoutes(progress: ProgressService, guard: BearerGuard) {
  return new Elysia({ name: 'playback.progress' })
    .use(guard)
    .put('/progress/:assetId', async ({ params, body, principal }) => ({ item: await progress.put(params.assetId, body.positionMs, principal) }), {
      policy: 'resource:asset:play',
      params: ProgressAssetParams,
      body: PutProgressBody,
      response: { 200: ProgressItemResponse },
      detail: {
        ...op('putPlaybackProgress', [...GUARD_CODES, 'PLAYBACK_ASSET_NOT_FOUND', 'BUS_NO_ANSWERER', 'BUS_TIMEOUT', 'BUS_UNAVAILABLE']),
        tags: ['progress'],
        summary: "Record where the actor is in an asset (their watch state)",
        security: [{ bearer: [] }],
        description:
          'Answers the item as stored: `played` is true past 90 % of the asset\'s duration; a position past the end counts as the ' +
          'end. Needs resource:asset:play. Domain codes: PLAYBACK_ASSET_NOT_FOUND (404), BUS_TIMEOUT (504).',
      },
    })
    .get('/progress', async ({ query, principal }) => ({ items: await progress.list(principal, { inProgress: query.inProgress, limit: query.limit }) }), {
      policy: 'resource:asset:play',
      query: ProgressListQuery,
      response: { 200: ProgressListResponse },
      detail: {
        ...op('listPlaybackProgress', [...GUARD_CODES]),
        tags: ['progress'],
        summary: "The actor's watch state, newest first; ?inProgress=true: continue watching (started, not played)",
        security: [{ bearer: [] }],
      },
    });
}
