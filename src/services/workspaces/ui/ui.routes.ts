// The dashboard at GET /ui and its hashed files under /ui/assets/. Public (no token): the page
// signs in itself and calls the API with a Bearer token. The policy allows this origin only, no
// inline script or style, no framing.
import { Elysia, t } from 'elysia';
import { WorkspaceErrors } from '../workspaces.errors';
import { INDEX, type UiAsset } from './ui.assets';

export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

export function uiRoutes(deps: { assets: () => Promise<Record<string, UiAsset>> }) {
  const notFound = () => WorkspaceErrors.NOT_FOUND('no such dashboard file');
  return new Elysia({ name: 'workspaces.ui' })
    .get(
      '/ui',
      async () => {
        const index = (await deps.assets())[INDEX]!;
        return new Response(index.body, {
          headers: { 'content-type': index.type, 'content-security-policy': UI_CSP, 'cache-control': 'no-cache', ...SECURITY },
        });
      },
      { detail: { hide: true } },
    )
    .get(
      '/ui/assets/:file',
      async ({ params }) => {
        const file = params.file === INDEX ? undefined : (await deps.assets())[params.file];
        if (!file) throw notFound();
        // Names carry a content hash: a new build is a new name.
        return new Response(file.body, { headers: { 'content-type': file.type, 'cache-control': 'public, max-age=31536000, immutable', ...SECURITY } });
      },
      { params: t.Object({ file: t.String({ maxLength: 128 }) }), detail: { hide: true } },
    );
}
