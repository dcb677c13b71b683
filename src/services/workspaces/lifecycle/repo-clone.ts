// Cloning a workspace's repo: on the Keel host (images need no git), shallow, without prompts and
// with a deadline, then streamed as a tar (owned by the workspace user) into the workspace volume.
// Only network transports are accepted: a workspace must not read Keel's own files via file:// or a path.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadable } from 'node:stream/web';

const SCHEMES = /^(https?|git|ssh):\/\/[^\s/]/i;
const SCP_LIKE = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)[^\s]+$/;

/** Why a repo URL is refused, or null when it is acceptable. */
export function repoUrlProblem(url: string): string | null {
  if (/[\s\0]/.test(url) || url.startsWith('-')) return 'the repo URL contains forbidden characters';
  if (SCHEMES.test(url) || SCP_LIKE.test(url)) return null;
  return 'the repo URL must use http://, https://, git://, ssh:// or user@host:path';
}

/** Removes credentials from URLs in any text: `https://user:token@host` -> `https://***@host`, token query values too. */
export function scrubUrls(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^@\s/'"]+@/gi, '$1***@')
    .replace(/([?&](?:access_token|token|private_token|password|key)=)[^&\s'"]+/gi, '$1***');
}

export class CloneError extends Error {}

export interface CloneOptions {
  url: string;
  branch?: string;
  timeoutMs: number;
  /** Aborting ends the clone at once (the workspace is being deleted). */
  signal?: AbortSignal;
}

/** Clones into a fresh temp dir; the caller removes it with `cleanup`. Throws CloneError with git's scrubbed message. */
export async function cloneRepo(opts: CloneOptions): Promise<{ dir: string; cleanup(): void }> {
  const base = mkdtempSync(join(tmpdir(), 'keel-clone-'));
  const dir = join(base, 'repo');
  const cleanup = () => rmSync(base, { recursive: true, force: true });
  const args = ['-c', 'protocol.file.allow=never', '-c', 'core.hooksPath=/dev/null', 'clone', '--depth', '1', '--single-branch', '--no-tags'];
  if (opts.branch) args.push('--branch', opts.branch);
  args.push('--', opts.url, dir);
  // Its own process group, so the deadline kills git's helpers too (git-remote-http, ssh), not only git.
  const proc = spawn('git', args, {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: base,
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '/bin/false',
      SSH_ASKPASS: '/bin/false',
      GIT_ALLOW_PROTOCOL: 'http:https:git:ssh',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
    },
  });
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 64 * 1024) stderr += d;
  });
  const killGroup = () => {
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      proc.kill('SIGKILL');
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, opts.timeoutMs);
  opts.signal?.addEventListener('abort', killGroup, { once: true });
  const code = await new Promise<number>((resolve) => {
    proc.on('error', () => resolve(-1));
    proc.on('exit', (c, signal) => resolve(c ?? (signal ? 128 : -1)));
  });
  clearTimeout(timer);
  opts.signal?.removeEventListener('abort', killGroup);
  if (opts.signal?.aborted) {
    cleanup();
    throw new CloneError('git clone was cancelled');
  }
  if (timedOut) {
    cleanup();
    throw new CloneError(`git clone did not finish within ${Math.round(opts.timeoutMs / 1000)} s`);
  }
  if (code !== 0) {
    cleanup();
    const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('Cloning into'));
    throw new CloneError(scrubUrls(`git clone failed: ${lines.slice(-3).join('; ') || `exit code ${code}`}`).slice(0, 500));
  }
  return { dir, cleanup };
}

/** A tar stream of `dir`'s contents, every entry owned by uid:gid, for the engine's putArchive. */
export function tarDirectory(dir: string, uid: number, gid: number): { stream: Readable; done: Promise<void> } {
  const proc = Bun.spawn(['tar', '-C', dir, `--owner=${uid}`, `--group=${gid}`, '--numeric-owner', '-cf', '-', '.'], {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const stream = Readable.fromWeb(proc.stdout as unknown as WebReadable);
  const done = (async () => {
    const err = await new Response(proc.stderr).text();
    if ((await proc.exited) !== 0) throw new CloneError(`packing the repo failed: ${err.trim().slice(0, 200)}`);
  })();
  return { stream, done };
}
