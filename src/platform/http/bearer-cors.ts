// CORS for the APIs a browser app on another Keel port calls (the media web app on the playback port
// calls identity and the catalog). These APIs take Bearer tokens only: no cookie or other ambient
// credential rides on a cross-origin request, so any origin may call them (`*`, never with
// credentials) and a page learns nothing it could not learn with its own token.
import { Elysia } from 'elysia';

const HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Retry-After, Location, Content-Length',
} as const;

const PREFLIGHT = {
  ...HEADERS,
  'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, Last-Event-ID',
  'access-control-max-age': '86400',
};

/** On every answer to a request that names an Origin; a preflight (OPTIONS with Access-Control-Request-Method) answers 204. */
export function bearerCors(service: string) {
  return new Elysia({ name: 'platform.bearer-cors', seed: service }).onRequest(({ request, set }) => {
    if (!request.headers.has('origin')) return;
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) return new Response(null, { status: 204, headers: PREFLIGHT });
    // Set before routing, so the error renderer keeps them on problems too.
    Object.assign(set.headers, HEADERS);
  });
}
