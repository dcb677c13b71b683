// CORS on the session URLs (/play/...): they are capability URLs (the signed token in the path is the
// whole credential, no cookie or header is involved), so any origin may read them, and a web player
// on another origin (hls.js, Shaka, a <video crossorigin>) can fetch playlists and segments and seek
// with Range. Every answer carries the headers, errors and preflights included.
import { Elysia } from 'elysia';

const PLAY_PREFIX = '/play/';

/** On every answer of a session URL. */
export const PLAY_CORS_HEADERS = {
  'access-control-allow-origin': '*',
  // Without these a cross-origin script sees only the safelisted headers: a player needs the size
  // and the range it got to seek, and Retry-After to wait for a segment.
  'access-control-expose-headers': 'Content-Range, Accept-Ranges, Content-Length, Content-Disposition, Retry-After',
  // A page isolated with Cross-Origin-Embedder-Policy may embed the media too.
  'cross-origin-resource-policy': 'cross-origin',
} as const;

/** The answer to a preflight: GET with a Range header is what players send. */
const PREFLIGHT_HEADERS = {
  ...PLAY_CORS_HEADERS,
  'access-control-allow-methods': 'GET, OPTIONS',
  'access-control-allow-headers': 'Range',
  'access-control-max-age': '86400',
};

const isPlayPath = (url: string) => {
  // The path starts after the scheme's "//" and the host; no URL object per request on the hot path.
  const start = url.indexOf('/', url.indexOf('//') + 2);
  return start !== -1 && url.startsWith(PLAY_PREFIX, start);
};

/** Adds the CORS headers to every answer under /play/ and answers its preflights (OPTIONS) with 204. */
export function playCors() {
  return new Elysia({ name: 'playback.cors' }).onRequest(({ request, set }) => {
    if (!isPlayPath(request.url)) return;
    if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });
    // Set before routing, so the error renderer (platform/http/errors.ts) keeps them on problems too.
    Object.assign(set.headers, PLAY_CORS_HEADERS);
  });
}
