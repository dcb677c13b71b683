// Previews behind a TLS proxy (APP_PREVIEW_PUBLIC_URL=https://{label}.preview.example.com): the links
// Keel hands out have that form, and a request the proxy passes on with the link's Host reaches the
// workspace, told the browser's scheme and host (X-Forwarded-Proto, X-Forwarded-Host).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { waitFor } from '../../helpers/docker';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { closeAndClean, createRunning, errorCode } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let ws = '';
let listenerPort = 0;

// An HTTP server that answers with the head of the request it got.
const ECHO_HEAD = `head=''
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\\r')
  [ -z "$line" ] && break
  head="$head$line
"
done
printf 'HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\nContent-Length: %s\\r\\nConnection: close\\r\\n\\r\\n%s' "\${#head}" "$head"
`;

const api = (path: string, init: RequestInit & { json?: unknown } = {}) => p.api('workspaces', path, init);

beforeAll(async () => {
  // A port of its own for the listener: the public form names no port, so the test must know it.
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  listenerPort = probe.port;
  probe.stop(true);
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_PREVIEW_PUBLIC_URL: 'https://{label}.preview.example.com', APP_PREVIEW_PORT: String(listenerPort) } });
  ws = (await createRunning(p, 'previews-public', { timeoutMs: 90_000 })).id;
  expect((await api(`/api/workspaces/${ws}/files?path=echo.sh`, { method: 'PUT', body: ECHO_HEAD })).status).toBe(200);
  expect((await api(`/api/workspaces/${ws}/processes`, { method: 'POST', json: { command: 'exec nc -ll -p 8084 -e sh /workspace/echo.sh' } })).status).toBe(201);
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

test("a link has APP_PREVIEW_PUBLIC_URL's form; the proxy's request with its Host reaches the workspace as https", async () => {
  const res = await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port: 8084 } });
  expect(res.status).toBe(201);
  const { url } = (await res.json()) as { url: string };
  expect(url).toMatch(/^https:\/\/[0-9a-f]{40}\.preview\.example\.com\/$/);
  const host = new URL(url).host;
  // What the TLS proxy sends on: the browser's Host, to Keel's preview listener.
  const through = await waitFor('the echo server', async () => {
    const r = await fetch(`http://127.0.0.1:${listenerPort}/page?x=1`, { headers: { host } });
    return r.status === 200 ? r : null;
  }, 20_000);
  const head = (await through.text()).toLowerCase();
  expect(head).toStartWith('get /page?x=1 http/1.1\n');
  expect(head).toContain(`x-forwarded-host: ${host}\n`);
  expect(head).toContain('x-forwarded-proto: https\n');

  const other = await fetch(`http://127.0.0.1:${listenerPort}/page`, { headers: { host: `${'0'.repeat(40)}.preview.example.com` } });
  expect(other.status).toBe(404);
  expect(await errorCode(other)).toBe('PREVIEW_NOT_FOUND');
});
