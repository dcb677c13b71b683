// The interactive API reference at /openapi, served whole by Keel: Scalar's standalone bundle comes
// from the pinned npm package (@scalar/api-reference, exact version in package.json), embedded in
// the single binary by Bun's file import, so the page works offline and runs no code a CDN serves.
// A Content-Security-Policy allows only Keel's own origin. Scripts run only from files of this origin;
// styles may also be inline, because Scalar's Vue components inject <style> elements without a nonce
// (seen in Chromium: eight refused with a nonce-only policy), and a nonce would switch 'unsafe-inline' off.
import { Elysia } from 'elysia';
// A file import (Bun): the value is the path of the file, in node_modules or inside the compiled
// binary. The package's `exports` do not list the bundle, hence the path into node_modules.
// @ts-expect-error -- no declaration for a plain script file; the value is a string path
import standalonePath from '../../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' };

export const REFERENCE_SCRIPT_PATH = '/openapi/assets/scalar.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The reference page's policy: nothing but this origin. */
export const REFERENCE_CSP = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    // Vue sets element.style through the CSSOM (allowed); Scalar's icons are inline SVG and data: images.
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    // The document, and "try it" requests to this same service.
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

function page(title: string, specPath: string): string {
  // No default fonts (they come from fonts.scalar.com), no AI agent, MCP or telemetry, no developer
  // tools (links to Scalar's hosted services); the document is fetched from this service.
  const config = {
    url: specPath,
    withDefaultFonts: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    telemetry: false,
    showDeveloperTools: 'never',
  };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
</head>
<body>
<script id="api-reference" data-configuration="${escapeHtml(JSON.stringify(config))}"></script>
<script src="${REFERENCE_SCRIPT_PATH}"></script>
</body>
</html>
`;
}

/** GET /openapi (the page) and GET /openapi/assets/scalar.js (the bundle), hidden from the document. */
export function referenceUi(opts: { title: string; specPath: string; path?: string }) {
  const script = Bun.file(standalonePath as string);
  const html = page(opts.title, opts.specPath);
  return new Elysia({ name: 'platform.reference-ui', seed: opts.title })
    .get(
      opts.path ?? '/openapi',
      () =>
        new Response(html, {
          headers: {
            'content-type': 'text/html; charset=utf-8',
            'content-security-policy': REFERENCE_CSP,
            'cache-control': 'no-cache',
            'x-content-type-options': 'nosniff',
            'referrer-policy': 'no-referrer',
          },
        }),
      { detail: { hide: true } },
    )
    .get(
      REFERENCE_SCRIPT_PATH,
      () =>
        new Response(script, {
          headers: {
            'content-type': 'text/javascript; charset=utf-8',
            // The file changes only with the pinned package version, i.e. with a new Keel build.
            'cache-control': 'public, max-age=86400',
            'x-content-type-options': 'nosniff',
          },
        }),
      { detail: { hide: true } },
    );
}
