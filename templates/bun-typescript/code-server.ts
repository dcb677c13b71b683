// Stand-in for code-server in the offline `bun-typescript` image (no code-server can be fetched
// where no registry or internet answers). It is honest about what it is: a small read-only browser
// of /workspace over HTTP: directories as lists of links, files as text. Edit files with exec or
// a repo; the image built from the Dockerfile runs the real code-server on this port instead.
// Like every Keel code server it answers only to the workspace's secret (KEEL_CODE_SECRET, given by
// Keel and shown to the owner in urls.codeServer): HTTP Basic `keel:<secret>` or `Bearer <secret>`;
// anything else is 401. Without a secret it serves nothing.
import { timingSafeEqual } from 'node:crypto';
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = realpathSync(process.env.KEEL_WORKSPACE ?? '/workspace');
const port = Number(process.env.PORT ?? 8080);
const SECRET = process.env.KEEL_CODE_SECRET ?? '';
if (!SECRET) console.error('keel: KEEL_CODE_SECRET is unset; the code server refuses every request');
const expected = [Buffer.from(`Basic ${Buffer.from(`keel:${SECRET}`).toString('base64')}`), Buffer.from(`Bearer ${SECRET}`)];
/** Constant-time comparison of the Authorization header with the two accepted forms. */
function authorized(req: Request): boolean {
  const got = Buffer.from(req.headers.get('authorization') ?? '');
  return SECRET !== '' && expected.some((e) => e.length === got.length && timingSafeEqual(e, got));
}
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

Bun.serve({
  hostname: '0.0.0.0',
  port,
  fetch(req) {
    if (!authorized(req)) return new Response('authentication required\n', { status: 401, headers: { 'www-authenticate': 'Basic realm="keel", charset="UTF-8"' } });
    const url = new URL(req.url);
    if (req.method !== 'GET' && req.method !== 'HEAD') return new Response('read-only\n', { status: 405, headers: { allow: 'GET, HEAD' } });
    if (url.pathname === '/healthz') return Response.json({ status: 'ok', server: 'keel-offline-code-server' });
    let path: string;
    try {
      // Confined to the workspace, symlinks included.
      path = realpathSync(join(ROOT, decodeURIComponent(url.pathname)));
    } catch {
      return new Response('not found\n', { status: 404 });
    }
    const rel = relative(ROOT, path);
    if (rel.startsWith('..')) return new Response('not found\n', { status: 404 });
    if (statSync(path).isDirectory()) {
      const items = readdirSync(path, { withFileTypes: true })
        .map((d) => `<li><a href="${esc(join('/', rel, d.name))}${d.isDirectory() ? '/' : ''}">${esc(d.name)}${d.isDirectory() ? '/' : ''}</a></li>`)
        .join('');
      const html = `<!doctype html><meta charset="utf-8"><title>/${esc(rel)} - Keel workspace</title><h1>/workspace/${esc(rel)}</h1><p>Keel's offline code server (read-only browser; code-server was not available to this image).</p><ul>${items}</ul>`;
      return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'x-keel-code-server': 'offline' } });
    }
    return new Response(Bun.file(path), { headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', 'x-keel-code-server': 'offline' } });
  },
});
console.log(`keel offline code server on :${port}, serving ${ROOT} read-only`);
