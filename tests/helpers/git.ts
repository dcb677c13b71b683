// Git servers on loopback for clone tests: a bare repository made on the spot, `git daemon`
// (git://), and `git http-backend` behind Bun.serve with HTTP basic auth (http://), which records
// what each request carried and can hold requests back to keep a clone in flight.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/machine';
import { waitFor } from './docker';

const GIT_ENV = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };

export function git(cwd: string, ...args: string[]) {
  const r = Bun.spawnSync(['git', ...args], { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...GIT_ENV } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** A bare repository `<root>/<name>.git` (branch main) holding `files`; returns its root. */
export function bareRepo(name: string, files: Record<string, string | Uint8Array>, root = mkdtempSync(join(tmpdir(), 'keel-git-'))): string {
  const work = join(root, `${name}-work`);
  mkdirSync(work, { recursive: true });
  git(work, 'init', '-q', '-b', 'main');
  for (const [f, content] of Object.entries(files)) writeFileSync(join(work, f), content);
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'init');
  git(root, 'clone', '-q', '--bare', work, join(root, `${name}.git`));
  git(join(root, `${name}.git`), 'symbolic-ref', 'HEAD', 'refs/heads/main');
  return root;
}

/** `git daemon` serving `root` read-only on loopback. */
export async function gitDaemon(root: string): Promise<{ port: number; stop(): void }> {
  const port = await freePort();
  const daemon = Bun.spawn(['git', 'daemon', '--export-all', '--reuseaddr', `--base-path=${root}`, '--listen=127.0.0.1', `--port=${port}`, root], { stdout: 'ignore', stderr: 'ignore' });
  const listening = () => Bun.spawnSync(['bash', '-c', `exec 3<>/dev/tcp/127.0.0.1/${port}`], { stdout: 'ignore', stderr: 'ignore' }).exitCode === 0;
  await waitFor('git daemon to listen', listening, 10_000, 200);
  return { port, stop: () => daemon.kill() };
}

export interface SeenRequest {
  path: string;
  authorization: string | null;
  headers: Record<string, string>;
}

export interface GitHttpServer {
  port: number;
  /** Every request received, in order. */
  seen: SeenRequest[];
  /** Holds every request back until the promise returned by `hold` resolves (for a clone kept in flight). */
  hold(until: Promise<void>): void;
  stop(): void;
}

/** `git http-backend` for `root` behind basic auth `user:pass` (none when `auth` is omitted). */
export function gitHttpServer(root: string, auth?: { user: string; pass: string }): GitHttpServer {
  const expected = auth ? `Basic ${Buffer.from(`${auth.user}:${auth.pass}`).toString('base64')}` : null;
  const seen: SeenRequest[] = [];
  let gate: Promise<void> = Promise.resolve();
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      seen.push({ path: url.pathname, authorization: req.headers.get('authorization'), headers: Object.fromEntries(req.headers) });
      await gate;
      if (expected && req.headers.get('authorization') !== expected) {
        return new Response('authentication required\n', { status: 401, headers: { 'www-authenticate': 'Basic realm="keel-test"' } });
      }
      const body = req.method === 'POST' ? new Uint8Array(await req.arrayBuffer()) : undefined;
      const proc = Bun.spawn(['git', 'http-backend'], {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          GIT_PROJECT_ROOT: root,
          GIT_HTTP_EXPORT_ALL: '1',
          PATH_INFO: url.pathname,
          QUERY_STRING: url.search.slice(1),
          REQUEST_METHOD: req.method,
          CONTENT_TYPE: req.headers.get('content-type') ?? '',
          HTTP_CONTENT_ENCODING: req.headers.get('content-encoding') ?? '',
          GIT_PROTOCOL: req.headers.get('git-protocol') ?? '',
          REMOTE_USER: auth?.user ?? '',
          REMOTE_ADDR: '127.0.0.1',
        },
        stdin: body ?? 'ignore',
        stdout: 'pipe',
        stderr: 'ignore',
      });
      const out = Buffer.from(await new Response(proc.stdout).arrayBuffer());
      let sep = out.indexOf('\r\n\r\n');
      let skip = 4;
      if (sep < 0) {
        sep = out.indexOf('\n\n');
        skip = 2;
      }
      const headers = new Headers();
      let status = 200;
      for (const line of out.subarray(0, sep).toString('latin1').split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
        else headers.append(k, v);
      }
      return new Response(out.subarray(sep + skip), { status, headers });
    },
  });
  return {
    port: server.port!,
    seen,
    hold(until) {
      gate = until;
    },
    stop: () => server.stop(true),
  };
}
