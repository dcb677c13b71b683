// The playback service over HTTP: POST /sessions behind the Bearer guard, and the session URLs, which
// carry their credential in the path (players cannot send headers). Byte ranges are HTTP: here.
import { Elysia } from 'elysia';
import { GUARD_CODES, type BearerGuard } from '../../platform/http/bearer-guard';
import { playCors } from './cors';
import { playbackOperation as op } from './playback.errors';
import { CreateSessionBody, CreateSessionResponse, EndSessionResponse, SessionIdParams, TokenFileParams, TokenParams } from './playback.model';
import { segmentNotFound, type Playback } from './playback.service';
import type { Rendition } from './renditions';

const PLAYLIST = { 'content-type': 'application/vnd.apple.mpegurl', 'cache-control': 'no-cache' };
/** What every session URL may answer besides its own codes: ended (410), identity not answering (503). */

/** A single `bytes=` range of a file of `size` bytes; null for none or several (the whole file answers). */
export function parseRange(header: string | null, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = header?.match(/^bytes=(\d*)-(\d*)$/);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (start > end || start >= size) return 'unsatisfiable';
  }
  return { start, end };
}

function serveFile(file: { path: string; size: number; type: string; disposition: string }, range: string | null): Response {
  const { path, size } = file;
  const base = { 'content-type': file.type, 'content-disposition': file.disposition, 'accept-ranges': 'bytes' };
  const r = parseRange(range, size);
  if (r === 'unsatisfiable') return new Response(null, { status: 416, headers: { ...base, 'content-range': `bytes */${size}` } });
  if (!r) return new Response(Bun.file(path), { headers: { ...base, 'content-length': String(size) } });
  return new Response(Bun.file(path).slice(r.start, r.end + 1), {
    status: 206,
    headers: { ...base, 'content-range': `bytes ${r.start}-${r.end}/${size}`, 'content-length': String(r.end - r.start + 1) },
  });
}

/** What a name under a session URL is: a segment or playlist of a rendition, a subtitle playlist or its WebVTT. */
export function renditionFile(name: string):
  | { type: 'segment'; index: number; rendition: Rendition }
  | { type: 'playlist'; rendition: Rendition }
  | { type: 'subtitles' | 'vtt'; n: number; index?: number }
  | null {
  let m = name.match(/^segment-(\d{1,6})\.ts$/);
  if (m) return { type: 'segment', index: Number(m[1]), rendition: { kind: 'source' } };
  m = name.match(/^segment-(\d{3,4})p-(\d{1,6})\.ts$/);
  if (m) return { type: 'segment', index: Number(m[2]), rendition: { kind: 'rung', height: Number(m[1]) } };
  m = name.match(/^audio-(\d{1,3})-segment-(\d{1,6})\.ts$/);
  if (m) return { type: 'segment', index: Number(m[2]), rendition: { kind: 'audio', stream: Number(m[1]) } };
  m = name.match(/^media-(\d{3,4})p\.m3u8$/);
  if (m) return { type: 'playlist', rendition: { kind: 'rung', height: Number(m[1]) } };
  m = name.match(/^audio-(\d{1,3})\.m3u8$/);
  if (m) return { type: 'playlist', rendition: { kind: 'audio', stream: Number(m[1]) } };
  m = name.match(/^subtitles-(\d{1,3})\.(m3u8|vtt)$/);
  if (m) return { type: m[2] === 'vtt' ? 'vtt' : 'subtitles', n: Number(m[1]) };
  m = name.match(/^subtitles-(\d{1,3})-(\d{1,6})\.vtt$/);
  if (m) return { type: 'vtt', n: Number(m[1]), index: Number(m[2]) };
  return null;
}

export function playbackRoutes(deps: { playback: Playback; guard: BearerGuard }) {
  const { playback } = deps;
  const sessions = new Elysia().use(deps.guard).post(
    '/sessions',
    async ({ body, request, set, principal }) => {
      set.status = 201;
      return { session: await playback.createSession(body, new URL(request.url).origin, principal) };
    },
    {
      policy: 'resource:asset:play',
      body: CreateSessionBody,
      response: { 201: CreateSessionResponse },
      detail: {
        ...op('createPlaybackSession', [...GUARD_CODES, 'PLAYBACK_ASSET_NOT_FOUND', 'PLAYBACK_NO_CAPABILITIES', 'PLAYBACK_SOURCE_UNAVAILABLE', 'BUS_NO_ANSWERER', 'BUS_TIMEOUT', 'BUS_UNAVAILABLE']),
        tags: ['sessions'],
        summary: 'Open a playback session for an asset',
        security: [{ bearer: [] }],
        description:
          'Answers the session with a URL that works without headers until expiresAt: the master playlist (mode hls, the ' +
          'default) or the file itself, with Range (mode direct). Needs a Bearer token with the policy resource:asset:play. ' +
          'Domain codes: PLAYBACK_ASSET_NOT_FOUND (404), PLAYBACK_NO_CAPABILITIES (409, the asset has indexed=false), ' +
          'PLAYBACK_SOURCE_UNAVAILABLE (409, no readable copy now), BUS_TIMEOUT (504). The URL works until expiresAt, until ' +
          'DELETE /sessions/{id}, or until the identity session of the token is revoked (within 5 s): then it answers 410 ' +
          'PLAYBACK_SESSION_ENDED.',
      },
    },
  ).delete('/sessions/:id', async ({ params, principal }) => ({ session: await playback.endSession(params.id, principal) }), {
    policy: 'resource:asset:play',
    params: SessionIdParams,
    response: { 200: EndSessionResponse },
    detail: {
      ...op('endPlaybackSession', [...GUARD_CODES, 'PLAYBACK_SESSION_NOT_FOUND']),
      tags: ['sessions'],
      summary: 'End a playback session now',
      security: [{ bearer: [] }],
      description:
        'Its URL answers 410 PLAYBACK_SESSION_ENDED from the next request on, on every replica. Only the actor who opened it ' +
        'may end it: another actor\'s session answers 404 PLAYBACK_SESSION_NOT_FOUND. Ending it again answers 200 with the first endedAt.',
    },
  });

  return new Elysia({ name: 'playback.routes' })
    .use(playCors())
    .use(sessions)
    .get('/play/:token/master.m3u8', async ({ params }) => new Response(await playback.master(params.token), { headers: PLAYLIST }), {
      params: TokenParams,
      detail: {
        ...op('getMasterPlaylist', ['PLAYBACK_SESSION_NOT_FOUND', 'PLAYBACK_SESSION_ENDED', 'identity-unavailable', 'PLAYBACK_ASSET_NOT_FOUND', 'PLAYBACK_NO_CAPABILITIES', 'PLAYBACK_SOURCE_UNAVAILABLE']),
        tags: ['play'],
        summary: 'The master playlist of an HLS session (application/vnd.apple.mpegurl)',
        description: 'Domain codes: PLAYBACK_SESSION_NOT_FOUND (404: unknown, forged or expired URL), PLAYBACK_SESSION_ENDED (410: ended by DELETE or by the revocation of its identity session).',
      },
    })
    .get('/play/:token/media.m3u8', async ({ params }) => new Response(await playback.media(params.token), { headers: PLAYLIST }), {
      params: TokenParams,
      detail: {
        ...op('getMediaPlaylist', ['PLAYBACK_SESSION_NOT_FOUND', 'PLAYBACK_SESSION_ENDED', 'identity-unavailable', 'PLAYBACK_ASSET_NOT_FOUND', 'PLAYBACK_NO_CAPABILITIES', 'PLAYBACK_SOURCE_UNAVAILABLE']),
        tags: ['play'],
        summary: 'The media playlist: segments cut at the indexed keyframes (about 6 s each)',
        description: 'Domain codes: PLAYBACK_SESSION_NOT_FOUND (404), PLAYBACK_SESSION_ENDED (410).',
      },
    })
    .get('/play/:token/thumbnails.vtt', async ({ params }) => new Response(await playback.thumbnails(params.token), { headers: { 'content-type': 'text/vtt; charset=utf-8', 'cache-control': 'no-cache' } }), {
      params: TokenParams,
      detail: {
        ...op('getThumbnailsVtt', ['PLAYBACK_SESSION_NOT_FOUND', 'PLAYBACK_SESSION_ENDED', 'identity-unavailable', 'PLAYBACK_THUMBNAILS_NOT_FOUND', 'PLAYBACK_ASSET_NOT_FOUND', 'PLAYBACK_SOURCE_UNAVAILABLE']),
        tags: ['play'],
        summary: 'Trickplay: WebVTT cues pointing at thumbnails.jpg#xywh=x,y,w,h, one per APP_PLAYBACK_THUMBNAIL_INTERVAL_S',
        description: 'Domain codes: PLAYBACK_SESSION_NOT_FOUND (404), PLAYBACK_SESSION_ENDED (410), PLAYBACK_THUMBNAILS_NOT_FOUND (404: no video).',
      },
    })
    .get('/play/:token/thumbnails.jpg', async ({ params }) => new Response(Bun.file(await playback.sprite(params.token)), { headers: { 'content-type': 'image/jpeg', 'cache-control': 'private, max-age=3600' } }), {
      params: TokenParams,
      detail: {
        ...op('getThumbnailsSprite', ['PLAYBACK_SESSION_NOT_FOUND', 'PLAYBACK_SESSION_ENDED', 'identity-unavailable', 'PLAYBACK_THUMBNAILS_NOT_FOUND', 'PLAYBACK_ASSET_NOT_FOUND', 'PLAYBACK_SOURCE_UNAVAILABLE', 'PLAYBACK_SEGMENT_FAILED']),
        tags: ['play'],
        summary: 'Trickplay: the sprite sheet of thumbnails (image/jpeg), made by a workers job on first request',
        description: 'Domain codes: PLAYBACK_SESSION_NOT_FOUND (404), PLAYBACK_SESSION_ENDED (410), PLAYBACK_THUMBNAILS_NOT_FOUND (404), PLAYBACK_SEGMENT_FAILED (503, retryable).',
      },
    })
    .get(
      '/play/:token/:name',
      async ({ params, request }) => {
        const named = renditionFile(params.name);
        if (named?.type === 'segment') {
          const path = await playback.segment(params.token, named.index, named.rendition);
          return new Response(Bun.file(path), { headers: { 'content-type': 'video/mp2t', 'cache-control': 'private, max-age=3600' } });
        }
        if (named?.type === 'playlist') return new Response(await playback.media(params.token, named.rendition), { headers: PLAYLIST });
        if (named?.type === 'subtitles') return new Response(await playback.subtitles(params.token, named.n), { headers: PLAYLIST });
        if (named?.type === 'vtt') {
          return new Response(await playback.subtitlesVtt(params.token, named.n, named.index), { headers: { 'content-type': 'text/vtt; charset=utf-8', 'cache-control': 'private, max-age=3600' } });
        }
        if (!/^file\.[a-z0-9]{1,5}$/.test(params.name)) throw segmentNotFound();
        return serveFile(await playback.directFile(params.token), request.headers.get('range'));
      },
      {
        params: TokenFileParams,
        detail: {
          ...op('getPlaybackFile', ['PLAYBACK_SESSION_NOT_FOUND', 'PLAYBACK_SESSION_ENDED', 'identity-unavailable', 'PLAYBACK_SEGMENT_NOT_FOUND', 'PLAYBACK_RENDITION_NOT_FOUND', 'PLAYBACK_ASSET_NOT_FOUND', 'PLAYBACK_SOURCE_UNAVAILABLE', 'PLAYBACK_SEGMENT_FAILED']),
          tags: ['play'],
          summary: 'A rendition file of an HLS session (segments, rung, audio and subtitle playlists, WebVTT) or the file of a direct session (file.<ext>, Range: 206)',
          description:
            'Names: segment-<n>.ts (the source), media-<h>p.m3u8 and segment-<h>p-<n>.ts (a rung of the ladder: 1080, 720, 480, 360 ' +
            'below the source height), audio-<stream>.m3u8 and audio-<stream>-segment-<n>.ts (an audio stream other than the first, ' +
            'AAC), subtitles-<n>.m3u8 and subtitles-<n>-<i>.vtt (a text subtitle, embedded or a sidecar file, as WebVTT with ' +
            'X-TIMESTAMP-MAP, one piece per segment; subtitles-<n>.vtt is the whole file). Every rendition is cut at the same indexed keyframes. PLAYBACK_RENDITION_NOT_FOUND (404): no such ' +
            'rendition in the master playlist. ' +
            'A segment is made on first request by a workers job (stream copy for H.264/AAC, H.264/AAC transcode otherwise), ' +
            'cached, and the next ones are made ahead. Domain codes: PLAYBACK_SESSION_NOT_FOUND (404), PLAYBACK_SESSION_ENDED (410), PLAYBACK_SEGMENT_NOT_FOUND ' +
            '(404), PLAYBACK_SOURCE_UNAVAILABLE (409), PLAYBACK_SEGMENT_FAILED (503, retryable, Retry-After). A range past the ' +
            'end answers 416 with Content-Range: bytes */size.',
        },
      },
    );
}
