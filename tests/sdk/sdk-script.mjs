// Run by tests/sdk/sdk.test.ts with `node` in a fresh project where @keel/sdk was installed from its
// tarball: every call of the contract against a real Keel (KEEL_URL, KEEL_TOKEN). Prints one JSON
// line of what it saw; the test checks it. Any throw fails the run (exit 1, the error on stderr).
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { Keel, KeelError } from '@keel/sdk';

const out = {};
const keel = new Keel(); // KEEL_URL, KEEL_TOKEN
const sha = (b) => createHash('sha256').update(b).digest('hex');

// Errors: the envelope as a KeelError.
try {
  await keel.workspaces.get('ws_doesnotexist');
} catch (e) {
  out.notFound = { isKeelError: e instanceof KeelError, status: e.status, code: e.code, hasMessage: typeof e.message === 'string' && e.message.length > 0 };
}

const ws = await keel.workspaces.create({ name: process.env.WS_NAME, template: 'minimal' });
out.created = { id: ws.id, status: ws.status, name: ws.name, template: ws.template, hasCommands: typeof ws.commands.run === 'function' };
out.listed = (await keel.workspaces.list()).some((w) => w.id === ws.id && w.status === 'running' && typeof w.files.read === 'function');
out.got = (await keel.workspaces.get(ws.id)).status;

// Commands: output streamed to the callbacks as text; a non-zero exit resolves.
const chunks = { stdout: [], stderr: [] };
const r = await ws.commands.run('echo "out $GREETING"; pwd; echo err >&2; exit 7', {
  env: { GREETING: 'héllo' },
  cwd: '/tmp',
  onStdout: (t) => chunks.stdout.push(t),
  onStderr: (t) => chunks.stderr.push(t),
});
out.run = { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, streamedOut: chunks.stdout.join(''), streamedErr: chunks.stderr.join(''), allText: [...chunks.stdout, ...chunks.stderr].every((c) => typeof c === 'string') };
const t = await ws.commands.run('sleep 5', { timeoutMs: 300 });
out.timeout = { exitCode: t.exitCode, timedOut: t.timedOut };

// Files: text, binary and a 50 MB stream, read back byte-identical.
await ws.files.write('sdk/a.txt', 'text ✓\n');
out.text = await ws.files.readText('sdk/a.txt');
const bin = new Uint8Array(4096).map((_, i) => (i * 7 + 3) & 255);
await ws.files.write('sdk/b.bin', bin);
out.binaryEqual = sha(await ws.files.read('sdk/b.bin')) === sha(bin);
const MB = 1024 * 1024;
const hash = createHash('sha256');
let sent = 0;
const big = new ReadableStream({
  pull(c) {
    if (sent >= 50 * MB) return c.close();
    const chunk = new Uint8Array(MB).fill(sent / MB);
    chunk[0] = 255;
    hash.update(chunk);
    sent += MB;
    c.enqueue(chunk);
  },
});
const written = await ws.files.write('sdk/big.bin', big);
const bigSum = hash.digest('hex');
const back = createHash('sha256');
let got = 0;
for await (const c of await ws.files.readStream('sdk/big.bin')) {
  back.update(c);
  got += c.length;
}
out.stream = { size: written.size, got, equal: back.digest('hex') === bigSum };
out.list = (await ws.files.list('sdk')).map((e) => `${e.name}:${e.type}:${e.size}`);
out.moved = await ws.files.move('sdk/b.bin', 'sdk/moved/b.bin');
out.afterMove = (await ws.files.list('sdk/moved')).map((e) => e.name);
await ws.files.remove('sdk/moved', { recursive: true });
await ws.files.remove('sdk/a.txt');
try {
  await ws.files.readText('sdk/a.txt');
} catch (e) {
  out.removed = e.code;
}

// Processes: stdin, output callbacks, kill, wait.
let catOut = '';
const p = await ws.processes.start('cat', { onStdout: (t) => (catOut += t) });
await p.sendStdin('ping\n');
for (let i = 0; i < 100 && !catOut.includes('ping'); i++) await new Promise((res) => setTimeout(res, 50));
await p.kill();
out.process = { echoed: catOut, wait: await p.wait() };
const q = await ws.processes.start('echo bye; exit 3');
out.exited = await q.wait();

// A preview of an HTTP server in the workspace, fetched through Keel's preview listener.
await ws.files.write('site/index.html', 'previewed by the sdk');
await ws.processes.start('httpd -f -p 8090 -h /workspace/site');
const preview = await ws.previews.create(8090);
const u = new URL(preview.url);
// Node does not resolve *.localhost; the listener routes on the Host header, so send it to 127.0.0.1.
const fetchPreview = () =>
  new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: u.port, path: '/index.html', headers: { host: u.host } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
let page;
for (let i = 0; i < 50; i++) {
  page = await fetchPreview();
  if (page.status === 200) break;
  await new Promise((res) => setTimeout(res, 100));
}
out.preview = { url: preview.url, port: preview.port, status: page.status, body: page.body };
out.previewListed = (await ws.previews.list()).some((v) => v.id === preview.id);
out.revoked = await ws.previews.revoke(preview.id);
out.afterRevoke = (await fetchPreview()).status;
out.processesListed = (await ws.processes.list()).length;

// Lifecycle.
out.paused = (await ws.pause()).status;
out.resumed = (await ws.resume()).status;
const snap = await ws.snapshot('sdk-snap');
out.snapshot = { id: snap.id, name: snap.name, workspaceId: snap.workspaceId };
const forks = await ws.fork('sdk-fork', 1);
out.fork = forks.map((f) => ({ name: f.name, hasMethods: typeof f.delete === 'function' }));
for (const f of forks) await f.delete({ volumes: true });
const ours = (await keel.snapshots.list()).filter((x) => x.workspaceId === ws.id);
out.snapshots = ours.map((x) => x.name).sort();
for (const x of ours) await keel.snapshots.delete(x.id);

// An agent turn with an approval, on the fake OpenAI-compatible provider.
const s = await keel.agent.sessions.create({ workspaceId: ws.id, model: 'openai/tools', toolApproval: 'always' });
const events = [];
for await (const e of s.send(JSON.stringify([{ name: 'run_command', input: { command: 'echo approved-by-sdk' } }]))) {
  events.push(e);
  if (e.type === 'approval') await s.approve(e.data.id);
}
out.cancelIdle = await s.cancel();
out.agent = {
  types: events.map((e) => e.type),
  ids: events.map((e) => e.id),
  tool: events.find((e) => e.type === 'tool')?.data.output,
  done: events.at(-1)?.data.content,
};

// A dropped connection: the first stream is cut after its first event; send() resumes from it.
let cut = false;
const cutting = new Keel({
  fetch: async (input, init) => {
    const res = await fetch(input, init);
    if (cut || !String(input).endsWith('/messages')) return res;
    cut = true;
    const reader = res.body.getReader();
    let buf = '';
    const body = new ReadableStream({
      async pull(c) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return c.close();
          buf += new TextDecoder().decode(value);
          const end = buf.indexOf('\n\n', buf.indexOf('id:'));
          if (buf.includes('id:') && end >= 0) {
            c.enqueue(new TextEncoder().encode(buf.slice(0, end + 2)));
            reader.cancel();
            c.error(new TypeError('connection reset (test)'));
            return;
          }
        }
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  },
});
const s2 = await cutting.agent.sessions.create({ workspaceId: ws.id, model: 'openai/echo' });
const resumed = [];
for await (const e of s2.send('one two three four five six')) resumed.push(e);
out.resume = {
  cut,
  types: resumed.map((e) => e.type),
  ids: resumed.map((e) => Number(e.id)),
  deltas: resumed.filter((e) => e.type === 'delta').map((e) => e.data.content).join(''),
  done: resumed.at(-1)?.data.content,
};

out.deleted = await ws.delete();
try {
  await keel.workspaces.get(ws.id);
} catch (e) {
  out.afterDelete = e.code;
}
console.log(JSON.stringify(out));
