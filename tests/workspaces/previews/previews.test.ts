// Previews through Keel's preview listener (CONTRACT.md, "Previews on origins of their own"): each
// preview a host of its own (`<label>.localhost`, routed on the Host header), a server started through
// the processes API (busybox httpd) reached over HTTP (streamed both ways) and WebSocket (tiny shell
// WebSocket servers under busybox nc); cookies kept to the preview's host, Service-Worker-Allowed
// dropped; expiry and revocation answer 410 and close open WebSockets within a second; an unknown
// host 404; a stopped workspace 409 at creation and 503 through its links; another actor's workspace
// 404; preview traffic recorded as activity.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { waitFor } from '../../helpers/docker';
import { directConnection, requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { closeAndClean, createRunning, errorCode, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform | undefined;
let ws = '';

/** Reads the request's head up to its blank line, keeping the Sec-WebSocket-Key. */
const READ_HEAD = `key=''
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\\r')
  [ -z "$line" ] && break
  case "$line" in [Ss]ec-[Ww]eb[Ss]ocket-[Kk]ey:*) key=$(printf '%s' "\${line#*:}" | tr -d ' ');; esac
done
`;
const HANDSHAKE = `accept=$(printf '%s' "\${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11" | sha1sum | cut -d' ' -f1 | xxd -r -p | base64)
printf 'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: %s\\r\\n\\r\\n' "$accept"
`;

// A WebSocket server in busybox sh: the handshake, one "hello" text frame, then the client's first
// (masked, short) frame sent back unmasked.
const WS_SERVER = `${READ_HEAD}${HANDSHAKE}printf '\\201\\005hello'
set -- $(dd bs=1 count=2 2>/dev/null | od -An -tu1); len=$(( $2 & 127 ))
set -- $(dd bs=1 count=4 2>/dev/null | od -An -tu1); m0=$1; m1=$2; m2=$3; m3=$4
out=''; i=0
for b in $(dd bs=1 count=$len 2>/dev/null | od -An -tu1); do
  case $((i % 4)) in 0) m=$m0;; 1) m=$m1;; 2) m=$m2;; 3) m=$m3;; esac
  out="$out\\\\$(printf %o $(( b ^ m )))"; i=$((i + 1))
done
printf "\\\\201\\\\$(printf %o $len)$out"
sleep 1
`;

// A WebSocket server that sends "tick" ten times a second until the connection goes.
const WS_TICKER = `${READ_HEAD}${HANDSHAKE}while printf '\\201\\004tick'; do sleep 0.1; done
`;

// An HTTP server whose answer sets cookies for a whole domain and widens its service worker's scope.
const COOKIE_SERVER = `${READ_HEAD}printf 'HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\nSet-Cookie: a=1; Domain=localhost; Path=/; HttpOnly\\r\\nSet-Cookie: b=2; path=/; domain=.localhost\\r\\nSet-Cookie: c=3; Path=/\\r\\nService-Worker-Allowed: /\\r\\nContent-Length: 3\\r\\nConnection: close\\r\\n\\r\\nok\\n'
`;

const api = (path: string, init: RequestInit & { as?: string; json?: unknown } = {}) => p!.api('workspaces', path, init);

async function startProcess(command: string) {
  const res = await api(`/api/workspaces/${ws}/processes`, { method: 'POST', json: { command } });
  expect(res.status).toBe(201);
}

async function preview(port: number, ttlSeconds?: number): Promise<{ id: string; url: string; expiresAt: string; port: number }> {
  const res = await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port, ...(ttlSeconds ? { ttlSeconds } : {}) } });
  expect(res.status).toBe(201);
  return res.json() as any;
}

/** The preview listener's port (APP_PREVIEW_PORT=0 in tests: read from a link). */
let listenerPort = 0;

/** The listener's address with the Host header `host`: what a browser sends for that name. */
const viaHost = (host: string, path = '/') => fetch(`http://127.0.0.1:${listenerPort}${path}`, { headers: { host } });

/** A WebSocket through a link; resolves once the first frame arrived. */
async function openSocket(url: string) {
  const s = { frames: [] as string[], closedAt: 0, code: 0, sock: new WebSocket(url.replace(/^http/, 'ws')) };
  s.sock.onmessage = (e) => s.frames.push(String(e.data));
  s.sock.onclose = (e) => {
    s.closedAt = Date.now();
    s.code = e.code;
  };
  await waitFor('the first frame', async () => s.frames.length >= 1, 20_000);
  return s;
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
  ws = (await createRunning(p!, 'previews', { timeoutMs: 90_000 })).id;
  const put = async (path: string, body: string) => expect((await api(`/api/workspaces/${ws}/files?path=${path}`, { method: 'PUT', body })).status).toBe(200);
  await put('site/hello.txt', 'hello from the workspace\n');
  // A page as Vite or Next.js build it: assets at absolute paths from the host's root.
  await put('site/index.html', '<!doctype html><link rel="stylesheet" href="/assets/app.css"><script type="module" src="/assets/app.js"></script><div id="app"></div>\n');
  await put('site/assets/app.js', 'document.getElementById("app").textContent = "built";\n');
  await put('site/assets/app.css', '#app { color: teal }\n');
  await put('ws.sh', WS_SERVER);
  await put('ticker.sh', WS_TICKER);
  await put('cookie.sh', COOKIE_SERVER);
  await startProcess('exec httpd -f -p 8090 -c /dev/null -h /workspace/site');
  await startProcess('exec nc -ll -p 8081 -e sh /workspace/ws.sh');
  await startProcess('exec nc -ll -p 8082 -e sh /workspace/cookie.sh');
  await startProcess('exec nc -ll -p 8083 -e sh /workspace/ticker.sh');
  listenerPort = Number(new URL((await preview(8090)).url).port);
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

test('a server started through the processes API is reached through its preview, on a host of its own, without any header', async () => {
  const link = await preview(8090);
  expect(link.url).toMatch(/^http:\/\/[0-9a-f]{40}\.localhost:\d+\/$/);
  expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(3500_000);
  const res = await waitFor('httpd to answer through the preview', async () => {
    const r = await fetch(link.url + 'hello.txt');
    return r.status === 200 ? r : null;
  }, 20_000);
  expect(await res.text()).toBe('hello from the workspace\n');
  expect((await fetch(link.url + 'missing.txt')).status).toBe(404);
});

test('every preview is a browser origin of its own: two links to one port have different hosts', async () => {
  const [a, b] = [await preview(8090), await preview(8090)];
  const [ha, hb] = [new URL(a.url).hostname, new URL(b.url).hostname];
  expect(ha).not.toBe(hb);
  for (const h of [ha, hb]) {
    const label = h.split('.')[0]!;
    expect(label).toMatch(/^[0-9a-f]+$/);
    expect(label.length).toBeLessThanOrEqual(63);
    expect(h).toBe(`${label}.localhost`);
  }
});

test('Keel routes on the Host header: a known label answers, an unknown label or a host without one 404', async () => {
  const link = await preview(8090);
  const ok = await viaHost(new URL(link.url).host, '/hello.txt');
  expect(ok.status).toBe(200);
  expect(await ok.text()).toBe('hello from the workspace\n');
  const unknown = await viaHost(`${'f'.repeat(40)}.localhost:${listenerPort}`, '/hello.txt');
  expect(unknown.status).toBe(404);
  expect(await errorCode(unknown)).toBe('PREVIEW_NOT_FOUND');
  for (const host of [`127.0.0.1:${listenerPort}`, `localhost:${listenerPort}`, `not-a-label.localhost:${listenerPort}`]) {
    const res = await viaHost(host, '/hello.txt');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('PREVIEW_NOT_FOUND');
  }
});

test('a page that loads its assets from absolute paths (/assets/x.js, as Vite builds it) works through its preview', async () => {
  const link = await preview(8090);
  const page = await fetch(link.url);
  expect(page.status).toBe(200);
  const html = await page.text();
  const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
  expect(assets).toEqual(['/assets/app.css', '/assets/app.js']);
  // Resolved against the page's URL, as a browser does: the host's root is the preview's.
  const js = await fetch(new URL(assets[1]!, link.url));
  expect(js.status).toBe(200);
  expect(await js.text()).toContain('textContent = "built"');
  expect((await fetch(new URL(assets[0]!, link.url))).status).toBe(200);
});

test("a cookie's Domain attribute is removed and Service-Worker-Allowed dropped; the rest of the answer passes", async () => {
  const link = await preview(8082);
  const res = await waitFor('the cookie server', async () => {
    const r = await fetch(link.url);
    return r.status === 200 ? r : null;
  }, 20_000);
  expect(res.headers.getSetCookie()).toEqual(['a=1; Path=/; HttpOnly', 'b=2; path=/', 'c=3; Path=/']);
  expect(res.headers.get('service-worker-allowed')).toBeNull();
  expect(res.headers.get('content-type')).toBe('text/plain');
  expect(await res.text()).toBe('ok\n');
});

test('a large response streams through whole', async () => {
  const big = new Uint8Array(20 * 1024 * 1024).map((_, i) => i % 253);
  expect((await api(`/api/workspaces/${ws}/files?path=site/big.bin`, { method: 'PUT', body: big })).status).toBe(200);
  const link = await preview(8090);
  const res = await fetch(link.url + 'big.bin');
  expect(res.status).toBe(200);
  const got = new Uint8Array(await res.arrayBuffer());
  expect(got.byteLength).toBe(big.byteLength);
  expect(Bun.hash(got)).toBe(Bun.hash(big));
});

test('a WebSocket upgrade reaches the workspace server; frames go both ways', async () => {
  const link = await preview(8081);
  const s = await openSocket(link.url + 'socket');
  expect(s.frames[0]).toBe('hello');
  s.sock.send('ping through keel');
  await waitFor('the echo', async () => s.frames.length >= 2, 20_000);
  expect(s.frames[1]).toBe('ping through keel');
  s.sock.close();
});

test('a WebSocket through a preview is closed within 1 s of the revoke, which answers 200 with a JSON body', async () => {
  const link = await preview(8083);
  const s = await openSocket(link.url);
  expect(s.frames[0]).toBe('tick');
  const del = await api(`/api/workspaces/${ws}/previews/${link.id}`, { method: 'DELETE' });
  const revokedAt = Date.now();
  expect(del.status).toBe(200);
  expect(await del.json()).toEqual({ id: link.id, revoked: true });
  await waitFor('the socket to close', async () => s.closedAt > 0, 5_000);
  expect(s.closedAt - revokedAt).toBeLessThan(1000);
  expect(s.code).toBe(1008);
  const after = s.frames.length;
  await Bun.sleep(500);
  expect(s.frames.length).toBe(after);
});

test('a WebSocket through a preview is closed within 1 s of its expiry', async () => {
  const link = await preview(8083, 3);
  const s = await openSocket(link.url);
  await waitFor('the socket to close', async () => s.closedAt > 0, 10_000);
  const late = s.closedAt - Date.parse(link.expiresAt);
  expect(late).toBeGreaterThan(-100);
  expect(late).toBeLessThan(1000);
  expect(s.code).toBe(1008);
  expect(s.frames.length).toBeGreaterThan(3);
});

test('a revoked link answers 410 at once, an expired one 410', async () => {
  const link = await preview(8090);
  const url = link.url + 'hello.txt';
  expect((await fetch(url)).status).toBe(200);
  const del = await api(`/api/workspaces/${ws}/previews/${link.id}`, { method: 'DELETE' });
  expect(del.status).toBe(200);
  const gone = await fetch(url);
  expect(gone.status).toBe(410);
  expect(await errorCode(gone)).toBe('PREVIEW_REVOKED');

  const short = await preview(8090, 1);
  expect((await fetch(short.url + 'hello.txt')).status).toBe(200);
  await Bun.sleep(1500);
  const expired = await fetch(short.url);
  expect(expired.status).toBe(410);
  expect(await errorCode(expired)).toBe('PREVIEW_EXPIRED');

  const list = (await (await api(`/api/workspaces/${ws}/previews`)).json()) as any;
  expect(list.previews.find((x: any) => x.id === link.id)).toMatchObject({ revoked: true });
});

test("another actor's workspace answers 404 for its previews; a bad port 400", async () => {
  expect((await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port: 8090 }, as: 'bob' })).status).toBe(404);
  expect((await api(`/api/workspaces/${ws}/previews`, { as: 'bob' })).status).toBe(404);
  const link = await preview(8090);
  const del = await api(`/api/workspaces/${ws}/previews/${link.id}`, { method: 'DELETE', as: 'bob' });
  expect(await errorCode(del)).toBe('WORKSPACE_NOT_FOUND');
  expect((await fetch(link.url + 'hello.txt')).status).toBe(200);
  expect((await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port: 70000 } })).status).toBe(400);
});

test('an agent makes, lists and revokes a preview through the MCP tools, as over HTTP', async () => {
  const client = new Client({ name: 'keel-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(p!.url('workspaces') + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${p!.token('alice')}` } } }));
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args })) as { content: { text: string }[]; isError?: boolean };
    return { isError: r.isError === true, value: JSON.parse(r.content[0]!.text) };
  };
  try {
    const made = await call('create_preview', { id: ws, port: 8090, ttlSeconds: 600 });
    expect(made.isError).toBe(false);
    expect(made.value.url).toMatch(/^http:\/\/[0-9a-f]{40}\.localhost:\d+\/$/);
    expect((await fetch(made.value.url + 'hello.txt')).status).toBe(200);
    const listed = await call('list_previews', { id: ws });
    expect(listed.value.previews.map((x: any) => x.id)).toContain(made.value.id);
    expect(await call('revoke_preview', { id: ws, previewId: made.value.id })).toEqual({ isError: false, value: { id: made.value.id, revoked: true } });
    expect((await fetch(made.value.url + 'hello.txt')).status).toBe(410);
    const refused = await call('create_preview', { id: ws, port: 70000 });
    expect(refused.isError).toBe(true);
    expect(refused.value.error.code).toBe('INVALID_REQUEST');
  } finally {
    await client.close();
  }
});

test('preview traffic is recorded as the workspace’s last activity', async () => {
  const link = await preview(8090);
  const before = Date.now();
  await Bun.sleep(1100);
  expect((await fetch(link.url + 'hello.txt')).status).toBe(200);
  const db = directConnection(p!);
  try {
    // Written after the answer (a page's requests do not wait on it).
    await waitFor('the activity row', async () => {
      const [row] = await db.all<{ at: string }>('SELECT last_activity_at AS at FROM workspaces_activity WHERE workspace_id = ?', [ws]);
      return !!row && Date.parse(row.at) >= before;
    }, 5_000);
  } finally {
    await db.close();
  }
});

test("a preview of the code server's port reaches it through Keel, behind its own secret", async () => {
  const view = (await (await api(`/api/workspaces/${ws}`)).json()) as any;
  const secret = new URL(view.urls.codeServer).password;
  const link = await preview(8080);
  const url = link.url + 'site/hello.txt';
  expect((await fetch(url)).status).toBe(401);
  const res = await fetch(url, { headers: { authorization: `Basic ${btoa(`keel:${secret}`)}` } });
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('hello from the workspace\n');
});

test('a stopped workspace: a new preview answers 409 WORKSPACE_NOT_RUNNING, an existing link 503 PREVIEW_UNAVAILABLE', async () => {
  const other = (await createRunning(p!, 'previews-stopped', { timeoutMs: 90_000 })).id;
  const made = await api(`/api/workspaces/${other}/previews`, { method: 'POST', json: { port: 8090 } });
  expect(made.status).toBe(201);
  const { url } = (await made.json()) as { url: string };
  expect((await api(`/api/workspaces/${other}/stop`, { method: 'POST' })).status).toBeLessThan(300);
  await waitStatus(p!, other, 'stopped', { timeoutMs: 60_000 });

  const refused = await api(`/api/workspaces/${other}/previews`, { method: 'POST', json: { port: 8090 } });
  expect(refused.status).toBe(409);
  expect(await errorCode(refused)).toBe('WORKSPACE_NOT_RUNNING');
  const through = await fetch(url);
  expect(through.status).toBe(503);
  expect(through.headers.get('retry-after')).toBe('5');
  expect(await errorCode(through)).toBe('PREVIEW_UNAVAILABLE');
}, 120_000);
