// The media web app at GET / on the playback port, its hashed files under /app/assets/, and
// /app/config.json: where its page reaches the catalog and identity (they answer CORS for Bearer
// calls, platform/http/bearer-cors.ts). Public: the page signs in itself with an identity API key.
// The policy allows this origin, the two services it calls and the catalog's images, no inline
// script or style, no framing; media from this origin (session URLs) and hls.js's blob: sources.
import { Elysia, t } from 'elysia';
import type { ServiceName } from '../../../platform/config';
import { INDEX, type ClientFiles } from '../../../platform/http/client-bundle';
import { PlaybackErrors } from '../playback.errors';

const SECURITY = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

export interface MediaAppDeps {
  assets: () => Promise<ClientFiles>;
  /** APP_MEDIA_APP_*_URL when set. */
  configured: { catalog: string; identity: string };
  /** The services listening in this process (their ports). */
  peers: Partial<Record<ServiceName, string>>;
  /** The configured ports, for services in other processes. */
  ports: Record<ServiceName, number>;
}

export function mediaAppRoutes(deps: MediaAppDeps) {
  /** The origin the page reaches `name` at: as configured, else the page's own host name with the service's port. */
  const origin = (name: 'catalog' | 'identity', request: Request) => {
    if (deps.configured[name]) return deps.configured[name];
    const page = new URL(request.url);
    const port = deps.peers[name] ? new URL(deps.peers[name]!).port : String(deps.ports[name]);
    return `${page.protocol}//${page.hostname.includes(':') ? `[${page.hostname}]` : page.hostname}:${port}`;
  };
  const csp = (request: Request) => {
    const [catalog, identity] = [origin('catalog', request), origin('identity', request)];
    return [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      `img-src 'self' data: blob: ${catalog}`,
      `connect-src 'self' ${catalog} ${identity}`,
      "media-src 'self' blob:",
      "worker-src 'self' blob:",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join('; ');
  };
  return new Elysia({ name: 'playback.app' })
    .get(
      '/',
      async ({ request }) => {
        const index = (await deps.assets())[INDEX]!;
        return new Response(index.body, { headers: { 'content-type': index.type, 'content-security-policy': csp(request), 'cache-control': 'no-cache', ...SECURITY } });
      },
      { detail: { hide: true } },
    )
    .get('/app/config.json', ({ request }) => ({ catalogUrl: origin('catalog', request), identityUrl: origin('identity', request) }), { detail: { hide: true } })
    .get(
      '/app/assets/:file',
      async ({ params }) => {
        const file = params.file === INDEX ? undefined : (await deps.assets())[params.file];
        if (!file) throw PlaybackErrors['not-found']('No such file of the media web app');
        // Names carry a content hash: a new build is a new name.
        return new Response(file.body, { headers: { 'content-type': file.type, 'cache-control': 'public, max-age=31536000, immutable', ...SECURITY } });
      },
      { params: t.Object({ file: t.String({ maxLength: 128 }) }), detail: { hide: true } },
    );
}
