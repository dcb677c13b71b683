// Cloning a workspace's repo: on the Keel host (images need no git), shallow, without prompts and with
// a deadline, a size cap and a place in the clone queue, then streamed as a tar (owned by the
// workspace user) into the workspace volume. What a clone may reach and use (docs/security.md, "Clones"):
// - http://, https:// and git:// only: no file:// or path (Keel's own files), no ssh (Keel has no SSH
//   identity to offer and never lends the host's);
// - targets follow platform/net/address-policy.ts; the name is resolved and checked first, and git is
//   pinned to the checked addresses (no second lookup an attacker's DNS could answer differently; a git
//   too old to be pinned is refused for names), as platform/net/pinned-fetch.ts pins Keel's own requests;
// - git runs with an empty HOME and no system or global config: no credential helper, insteadOf or
//   proxy of the Keel user applies; redirects are not followed (they could lead anywhere);
// - credentials in the URL travel as an Authorization header in git's environment config, never in
//   argv (a process list), the stored URL, `.git/config`, a log or a failure reason.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { literalRefusal, parseIpLiteral, REFUSAL_TEXT, resolveAllowed, TargetRefused, type Resolver, type TargetPolicy } from '../../../platform/net/address-policy';
import type { QueueTicket } from '../../../platform/bounded-queue';

const ALLOWED_SCHEMES = new Set(['http:', 'https:', 'git:']);
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'git:': 9418 };
const SCP_LIKE = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)/;
/**
 * How often the clone's size on disk is measured, on top of the limits set where the bytes are
 * written (see cloneRepo); between two measurements only what those limits allow can arrive.
 */
const SIZE_POLL_MS = 250;
/** Block size assumed when predicting what a checkout takes on disk (a file takes whole blocks). */
const BLOCK = 4096;
/**
 * Attributes that would make the checkout write more than the blobs hold (CRLF conversion, a
 * re-encoding to UTF-16, `$Id$` expansion, filters) are turned off for the checkout, so what it
 * writes is exactly what the tree says (`$GIT_DIR/info/attributes` takes precedence over the repo's).
 */
const CHECKOUT_ATTRIBUTES = '* -text !eol !working-tree-encoding -filter -ident\n';
const tooLarge = (stderr: string) => /File too large|signal 25|SIGXFSZ/i.test(stderr);

/**
 * What checking out HEAD will take on disk, from the tree alone (no blob is inflated): each file and
 * symlink rounded up to whole blocks, a block per directory, and the index. null: nothing to check
 * out (an empty repository); 'failed': the tree could not be read.
 */
async function predictCheckout(dir: string, env: Record<string, string>): Promise<number | null | 'failed'> {
  const proc = spawn('git', ['-C', dir, 'ls-tree', '-r', '-t', '-l', '--full-tree', '-z', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'], env });
  let total = 0;
  let entries = 0;
  let rest = '';
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const records = (rest + chunk).split('\0');
    rest = records.pop()!;
    for (const rec of records) {
      // "<mode> <type> <object> <size>\t<path>": size is "-" for trees and submodules.
      const m = /^\d+ (\w+) \S+ +(-|\d+)\t(.*)$/s.exec(rec);
      if (!m) continue;
      entries++;
      const size = m[2] === '-' ? 0 : Number(m[2]);
      total += m[1] === 'tree' ? BLOCK : Math.ceil(size / BLOCK) * BLOCK;
      // The index holds ~62 bytes and the path per entry.
      total += 64 + Buffer.byteLength(m[3]!);
    }
  });
  const code = await new Promise<number>((resolve) => {
    proc.on('error', () => resolve(-1));
    proc.on('close', (c) => resolve(c ?? -1));
  });
  if (code === 0) return total + (entries > 0 ? BLOCK : 0);
  // An empty repository has no HEAD to check out; any other failure must not pass as "no files".
  const head = spawn('git', ['-C', dir, 'rev-parse', '--verify', '-q', 'HEAD'], { stdio: 'ignore', env });
  const headCode = await new Promise<number>((resolve) => {
    head.on('error', () => resolve(-1));
    head.on('close', (c) => resolve(c ?? -1));
  });
  return headCode === 1 ? null : 'failed';
}

/** A repo URL taken apart: what git is given, what is shown and stored, and the credentials kept apart. */
export interface RepoTarget {
  scheme: 'http:' | 'https:' | 'git:';
  /** Host as written in the URL (IPv6 without brackets), and the port git connects to. */
  host: string;
  port: number;
  /** The URL without credentials: what git fetches, what `.git/config` and the database keep. */
  url: string;
  /** `Basic ...` for credentials given in the URL; never logged, shown or stored. */
  authorization?: string;
}

/** The URL taken apart, or why it is refused (a message naming no part of it). */
export function parseRepoUrl(raw: string): RepoTarget | string {
  if (/[\s\0]/.test(raw) || raw.startsWith('-')) return 'the repo URL contains forbidden characters';
  if (/^ssh:\/\//i.test(raw) || SCP_LIKE.test(raw)) {
    return 'ssh repo URLs are not accepted: Keel has no SSH identity to clone with and never uses its host\'s; use https:// (with user:token@ for a private repo)';
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'the repo URL must use http://, https:// or git://';
  }
  if (!ALLOWED_SCHEMES.has(u.protocol) || !u.hostname) return 'the repo URL must use http://, https:// or git://';
  if (u.search || u.hash) return 'the repo URL must not carry a query or a fragment (give credentials as user:token@)';
  const scheme = u.protocol as RepoTarget['scheme'];
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = u.port ? Number(u.port) : DEFAULT_PORTS[scheme]!;
  let authorization: string | undefined;
  if (u.username || u.password) {
    if (scheme === 'git:') return 'git:// URLs carry no credentials';
    let user: string;
    let pass: string;
    try {
      user = decodeURIComponent(u.username);
      pass = decodeURIComponent(u.password);
    } catch {
      return 'the repo URL\'s credentials are not valid percent-encoding';
    }
    if (/[\x00-\x1f\x7f]/.test(user + pass) || user.includes(':')) return 'the repo URL\'s credentials contain forbidden characters';
    authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  }
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const url = `${scheme}//${hostPart}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  return { scheme, host, port, url, authorization };
}

/** Why a repo URL is refused at create (format, or an IP literal the target rules refuse), or null. */
export function repoUrlProblem(raw: string, policy: TargetPolicy): string | null {
  const t = parseRepoUrl(raw);
  if (typeof t === 'string') return t;
  const refused = literalRefusal(t.host, policy, t.port);
  return refused ? `the repo host is ${REFUSAL_TEXT[refused]}; clones may not reach it` : null;
}

/**
 * The first git that honours `http.curloptResolve`: an older one ignores it and looks the name up
 * again, so a clone of an http(s) name is refused with it rather than left unpinned.
 */
const PINNING_GIT = [2, 37] as const;
const gitVersions = new Map<string, Promise<[number, number] | null>>();
/** `git --version` of the git on `searchPath` (asked once per path), or null when it does not say. */
function gitVersion(searchPath: string): Promise<[number, number] | null> {
  let v = gitVersions.get(searchPath);
  if (!v) {
    v = new Promise((resolve) => {
      const proc = spawn('git', ['--version'], { stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: searchPath } });
      let out = '';
      proc.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
      proc.on('error', () => resolve(null));
      proc.on('close', () => {
        const m = /git version (\d+)\.(\d+)/.exec(out);
        resolve(m ? [Number(m[1]), Number(m[2])] : null);
      });
    });
    gitVersions.set(searchPath, v);
  }
  return v;
}
const pinsByName = (v: [number, number] | null) => v !== null && (v[0] > PINNING_GIT[0] || (v[0] === PINNING_GIT[0] && v[1] >= PINNING_GIT[1]));

/** Removes credentials from URLs in any text: `https://user:token@host` -> `https://***@host`, token query values too. */
export function scrubUrls(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^@\s/'"]+@/gi, '$1***@')
    .replace(/([?&](?:access_token|token|private_token|password|key)=)[^&\s'"]+/gi, '$1***');
}

/** A repo to clone once the workspace exists, holding its place in the clone queue. */
export interface RepoRequest {
  url: string;
  branch?: string;
  ticket: QueueTicket;
}

export class CloneError extends Error {}

export interface CloneOptions {
  url: string;
  branch?: string;
  timeoutMs: number;
  /** Bytes the clone may take on disk; past them it is aborted. */
  maxBytes: number;
  policy: TargetPolicy;
  /** The place in the clone queue; the clone waits for a running place through it. */
  ticket: QueueTicket;
  /** Aborting ends the clone at once (the workspace is being deleted). */
  signal?: AbortSignal;
  /** Name resolution (the system resolver by default). */
  resolve?: Resolver;
  /** The PATH git runs with (CloneSettings.searchPath, from the Keel process's PATH). */
  searchPath: string;
}

/** Bytes a directory tree takes on disk (allocated blocks; a file that vanishes meanwhile counts nothing). */
export async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      const st = await lstat(p).catch(() => null);
      if (!st) continue;
      total += st.blocks * 512;
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return total;
}

/** git's configuration for one clone, given through its environment (GIT_CONFIG_COUNT), never argv. */
function gitEnv(home: string, config: [string, string][], searchPath: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: searchPath,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_ALLOW_PROTOCOL: 'http:https:git',
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

/**
 * Runs git (its own process group, so a kill reaches its helpers too); resolves with the exit and stderr.
 * `maxFileBytes`: no file git (or a helper it starts, index-pack included) writes may grow past it
 * (RLIMIT_FSIZE, set by `ulimit -f` in 512-byte blocks). SIGXFSZ is ignored, so the write that would
 * pass it fails with EFBIG ("File too large") and git exits on its own, cleaning up after itself.
 */
function runGit(
  args: string[],
  env: Record<string, string>,
  opts: { timeoutMs: number; signal?: AbortSignal; watch?: (kill: (why: string) => void) => () => void; maxFileBytes?: number; cwd?: string },
) {
  const [cmd, argv] =
    opts.maxFileBytes === undefined
      ? ['git', args]
      : ['/bin/sh', ['-c', 'trap "" XFSZ; ulimit -f "$1" || exit 97; shift; exec git "$@"', 'keel-git', String(Math.max(1, Math.floor(opts.maxFileBytes / 512))), ...args]];
  const proc = spawn(cmd, argv as string[], { detached: true, stdio: ['ignore', 'ignore', 'pipe'], env, cwd: opts.cwd });
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 64 * 1024) stderr += d;
  });
  let killedFor: string | undefined;
  const kill = (why: string) => {
    killedFor ??= why;
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      proc.kill('SIGKILL');
    }
  };
  const timer = setTimeout(() => kill('timeout'), opts.timeoutMs);
  const onAbort = () => kill('cancelled');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const unwatch = opts.watch?.(kill);
  return new Promise<{ code: number; stderr: string; killedFor?: string }>((resolve) => {
    const done = (code: number) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      unwatch?.();
      resolve({ code, stderr, killedFor });
    };
    proc.on('error', () => done(-1));
    proc.on('exit', (c, sig) => done(c ?? (sig ? 128 : -1)));
  });
}

/**
 * Waits for a place in the clone queue, checks where the host resolves, then clones into a fresh
 * temp dir; the caller removes it with `cleanup`. Throws CloneError with a message that names no
 * credential.
 */
export async function cloneRepo(opts: CloneOptions): Promise<{ dir: string; cleanup(): void }> {
  const target = parseRepoUrl(opts.url);
  if (typeof target === 'string') throw new CloneError(target);
  return opts.ticket.run(async () => {
    let addresses: string[];
    try {
      addresses = await resolveAllowed(target.host, opts.policy, opts.resolve, target.port);
    } catch (e) {
      if (e instanceof TargetRefused) throw new CloneError(`git clone refused: ${e.message}; clones may not reach it`);
      throw e;
    }
    opts.signal?.throwIfAborted();
    if (target.scheme !== 'git:' && !parseIpLiteral(target.host) && !pinsByName(await gitVersion(opts.searchPath))) {
      throw new CloneError(
        `git clone refused: the Keel host's git is older than ${PINNING_GIT.join('.')} and cannot be held to the checked address of a host name (http.curloptResolve); the operator must install a newer git`,
      );
    }

    const base = mkdtempSync(join(tmpdir(), 'keel-clone-'));
    const home = join(base, 'home');
    mkdirSync(home);
    const dir = join(base, 'repo');
    const cleanup = () => rmSync(base, { recursive: true, force: true });

    // Pin the connection to the addresses just checked: curl's resolve list for http(s) (the name
    // stays in the URL, for TLS and Host), the address itself for git:// (its protocol needs no name).
    const config: [string, string][] = [
      ['core.hooksPath', '/dev/null'],
      ['credential.helper', ''],
      ['http.followRedirects', 'false'],
      ['protocol.file.allow', 'never'],
      // The fetched pack is kept as one file (never exploded into loose objects), so the file size
      // limit below bounds everything the fetch writes.
      ['fetch.unpackLimit', '1'],
      ['transfer.unpackLimit', '1'],
    ];
    let fetchUrl = target.url;
    const pinned = addresses.map((a) => (a.includes(':') ? `[${a}]` : a));
    if (target.scheme === 'git:') {
      fetchUrl = target.url.replace(/^git:\/\/(\[[^\]]*\]|[^/:]*)/, `git://${pinned[0]}`);
    } else if (!parseIpLiteral(target.host)) {
      config.push(['http.curloptResolve', `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}:${pinned.join(',')}`]);
    }
    if (target.authorization) config.push(['http.extraHeader', `Authorization: ${target.authorization}`]);
    const env = gitEnv(home, config, opts.searchPath);

    // Two steps, each bounded where it writes (docs/security.md, "Size, time and concurrency"):
    // the fetch (no checkout) writes one pack, which no file size limit lets grow past the cap; the
    // checkout is measured from the tree before any file is written, and runs under what remains.
    // The size poll stays as a net for what falls between (the pack's index, many small files).
    const args = ['clone', '--depth', '1', '--single-branch', '--no-tags', '--no-checkout', '--template='];
    if (opts.branch) args.push('--branch', opts.branch);
    args.push('--', fetchUrl, dir);

    let over = false;
    const watch = (kill: (why: string) => void) => {
      let stopped = false;
      const poll = async () => {
        if (stopped) return;
        if ((await diskUsage(base)) > opts.maxBytes) {
          over = true;
          return kill('size');
        }
        if (!stopped) timer = setTimeout(poll, SIZE_POLL_MS);
      };
      let timer = setTimeout(poll, SIZE_POLL_MS);
      return () => {
        stopped = true;
        clearTimeout(timer);
      };
    };
    const deadline = Date.now() + opts.timeoutMs;
    const r = await runGit(args, env, { timeoutMs: opts.timeoutMs, signal: opts.signal, watch, maxFileBytes: opts.maxBytes });
    const fail = (message: string): never => {
      cleanup();
      throw new CloneError(message);
    };
    const tooBig = `git clone stopped: the repository takes more than ${Math.round(opts.maxBytes / (1024 * 1024))} MiB on disk (APP_CLONE_MAX_MB)`;
    const settle = (step: { code: number; stderr: string; killedFor?: string }) => {
      if (opts.signal?.aborted || step.killedFor === 'cancelled') fail('git clone was cancelled');
      if (step.killedFor === 'timeout') fail(`git clone did not finish within ${Math.round(opts.timeoutMs / 1000)} s`);
      if (over || step.killedFor === 'size' || (step.code !== 0 && tooLarge(step.stderr))) fail(tooBig);
      if (step.code !== 0) {
        const lines = step.stderr.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('Cloning into'));
        fail(scrubUrls(`git clone failed: ${lines.slice(-3).join('; ') || `exit code ${step.code}`}`).slice(0, 500));
      }
    };
    settle(r);

    const checkout = await predictCheckout(dir, env);
    if (checkout === 'failed') fail('git clone failed: the fetched tree could not be read');
    if (typeof checkout === 'number') {
      const room = opts.maxBytes - (await diskUsage(base));
      if (checkout > room) fail(tooBig);
      const attributes = join(dir, '.git', 'info', 'attributes');
      mkdirSync(join(dir, '.git', 'info'), { recursive: true });
      writeFileSync(attributes, CHECKOUT_ATTRIBUTES);
      const timeoutMs = Math.max(1, deadline - Date.now());
      settle(await runGit(['reset', '-q', '--hard', 'HEAD'], env, { timeoutMs, signal: opts.signal, watch, maxFileBytes: room, cwd: dir }));
      rmSync(attributes, { force: true });
    }
    // The last pieces may have landed after the last measurement.
    if ((await diskUsage(base)) > opts.maxBytes) fail(tooBig);
    // The remote as the user wrote it (a git:// clone fetched from the pinned address), never credentials.
    const set = await runGit(['config', '--file', join(dir, '.git', 'config'), 'remote.origin.url', target.url], env, { timeoutMs: 10_000 });
    if (set.code !== 0) fail('git clone failed: could not record the remote URL');
    rmSync(home, { recursive: true, force: true });
    return { dir, cleanup };
  }, opts.signal).catch((e) => {
    if (e instanceof CloneError) throw e;
    if (opts.signal?.aborted) throw new CloneError('git clone was cancelled');
    throw e;
  });
}
