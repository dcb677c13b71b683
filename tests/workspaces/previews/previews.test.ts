// Previews through Keel's preview listener (CONTRACT.md, "The workspace as an agent's computer"): a
// server started through the processes API (busybox httpd), reached over HTTP (streamed both ways)
// and WebSocket (a tiny shell WebSocket server under busybox nc); expiry and revocation answer 410,
// an unknown link 404; another actor's workspace 404; preview traffic recorded as activity.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { waitFor } from '../../helpers/docker';
import { directConnection, requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { closeAndClean, createRunning, errorCode, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform | undefined;
let ws = '';

// A WebSocket server in busybox sh: the handshake, one "hello" text frame, then the client's first
// (masked, short) frame sent back unmasked.
const WS_SERVER = `key=''
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\\r')
  [ -z "$line" ] && break
  case "$line" in [Ss]ec-[Ww]eb[Ss]ocket-[Kk]ey:*) key=$(printf '%s' "\${line#*:}" | tr -d ' ');; esac
done
accept=$(printf '%s' "\${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11" | sha1sum | cut -d' ' -f1 | xxd -r -p | base64)
printf 'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: %s\\r\\n\\r\\n' "$accept"
printf '\\201\\005hello'
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

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
  ws = (await createRunning(p!, 'previews', { timeoutMs: 90_000 })).id;
  expect((await api(`/api/workspaces/${ws}/files?path=site/hello.txt`, { method: 'PUT', body: 'hello from the workspace\n' })).status).toBe(200);
  expect((await api(`/api/workspaces/${ws}/files?path=ws.sh`, { method: 'PUT', body: WS_SERVER })).status).toBe(200);
  await startProcess('exec httpd -f -p 8090 -c /dev/null -h /workspace/site');
  await startProcess('exec nc -ll -p 8081 -e sh /workspace/ws.sh');
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

test('a server started through the processes API is reached through its preview link, without any header', async () => {
  const link = await preview(8090);
  expect(link.url).toMatch(/^http:\/\/localhost:\d+\/p\/[0-9a-f]{40}\/$/);
  expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(3500_000);
  const url = link.url.replace('localhost', '127.0.0.1');
  const res = await waitFor('httpd to answer through the preview', async () => {
    const r = await fetch(url + 'hello.txt');
    return r.status === 200 ? r : null;
  }, 20_000);
  expect(await res.text()).toBe('hello from the workspace\n');
  // The link's own prefix without its slash redirects to it, so the app's relative links resolve.
  const bare = await fetch(url.slice(0, -1), { redirect: 'manual' });
  expect(bare.status).toBe(308);
  expect((await fetch(url + 'missing.txt')).status).toBe(404);
});

test('a large response streams through whole', async () => {
  const big = new Uint8Array(20 * 1024 * 1024).map((_, i) => i % 253);
  expect((await api(`/api/workspaces/${ws}/files?path=site/big.bin`, { method: 'PUT', body: big })).status).toBe(200);
  const link = await preview(8090);
  const res = await fetch(link.url.replace('localhost', '127.0.0.1') + 'big.bin');
  expect(res.status).toBe(200);
  const got = new Uint8Array(await res.arrayBuffer());
  expect(got.byteLength).toBe(big.byteLength);
  expect(Bun.hash(got)).toBe(Bun.hash(big));
});

test('a WebSocket upgrade reaches the workspace server; frames go both ways', async () => {
  const link = await preview(8081);
  const received: string[] = [];
  const sock = new WebSocket(link.url.replace('http://localhost', 'ws://127.0.0.1') + 'socket');
  sock.onmessage = (e) => received.push(String(e.data));
  await waitFor('the greeting', async () => received.length >= 1, 20_000);
  expect(received[0]).toBe('hello');
  sock.send('ping through keel');
  await waitFor('the echo', async () => received.length >= 2, 20_000);
  expect(received[1]).toBe('ping through keel');
  sock.close();
});

test('a revoked link answers 410 at once, an expired one 410, an unknown one 404', async () => {
  const link = await preview(8090);
  const url = link.url.replace('localhost', '127.0.0.1') + 'hello.txt';
  expect((await fetch(url)).status).toBe(200);
  const del = await api(`/api/workspaces/${ws}/previews/${link.id}`, { method: 'DELETE' });
  expect(await del.json()).toEqual({ id: link.id, revoked: true });
  const gone = await fetch(url);
  expect(gone.status).toBe(410);
  expect(await errorCode(gone)).toBe('PREVIEW_REVOKED');

  const short = await preview(8090, 1);
  await Bun.sleep(1500);
  const expired = await fetch(short.url.replace('localhost', '127.0.0.1'));
  expect(expired.status).toBe(410);
  expect(await errorCode(expired)).toBe('PREVIEW_EXPIRED');

  const unknown = await fetch(short.url.replace('localhost', '127.0.0.1').replace(/[0-9a-f]{40}/, 'f'.repeat(40)));
  expect(unknown.status).toBe(404);
  expect(await errorCode(unknown)).toBe('PREVIEW_NOT_FOUND');

  const list = (await (await api(`/api/workspaces/${ws}/previews`)).json()) as any;
  expect(list.previews.find((x: any) => x.id === link.id)).toMatchObject({ revoked: true });
});

test("another actor's workspace answers 404 for its previews; a bad port 400", async () => {
  expect((await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port: 8090 }, as: 'bob' })).status).toBe(404);
  expect((await api(`/api/workspaces/${ws}/previews`, { as: 'bob' })).status).toBe(404);
  const link = await preview(8090);
  const del = await api(`/api/workspaces/${ws}/previews/${link.id}`, { method: 'DELETE', as: 'bob' });
  expect(await errorCode(del)).toBe('WORKSPACE_NOT_FOUND');
  expect((await fetch(link.url.replace('localhost', '127.0.0.1') + 'hello.txt')).status).toBe(200);
  expect((await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port: 70000 } })).status).toBe(400);
});

test('preview traffic is recorded as the workspace’s last activity', async () => {
  const link = await preview(8090);
  const before = Date.now();
  await Bun.sleep(1100);
  expect((await fetch(link.url.replace('localhost', '127.0.0.1') + 'hello.txt')).status).toBe(200);
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
  const url = link.url.replace('localhost', '127.0.0.1') + 'site/hello.txt';
  expect((await fetch(url)).status).toBe(401);
  const res = await fetch(url, { headers: { authorization: `Basic ${btoa(`keel:${secret}`)}` } });
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('hello from the workspace\n');
});

test('a link to a workspace that is not running answers 409 WORKSPACE_NOT_RUNNING', async () => {
  const other = (await createRunning(p!, 'previews-stopped', { timeoutMs: 90_000 })).id;
  expect((await api(`/api/workspaces/${other}/stop`, { method: 'POST' })).status).toBeLessThan(300);
  await waitStatus(p!, other, 'stopped', { timeoutMs: 60_000 });
  const res = await api(`/api/workspaces/${other}/previews`, { method: 'POST', json: { port: 8090 } });
  expect(res.status).toBe(201);
  const { url } = (await res.json()) as { url: string };
  const through = await fetch(url.replace('localhost', '127.0.0.1'));
  expect(through.status).toBe(409);
  expect(await errorCode(through)).toBe('WORKSPACE_NOT_RUNNING');
}, 120_000);
