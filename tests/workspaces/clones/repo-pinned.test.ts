// A clone connects to the address that was checked, never to what a second lookup answers: cloneRepo
// against real git servers on loopback (`git http-backend` for http://, `git daemon` for git://), with
// DNS given as its resolver parameter. The names end in `.test`, which the system resolver never
// answers: a clone that succeeds was dialled to the checked address (git's own lookup was pinned).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBoundedQueue } from '../../../src/platform/bounded-queue';
import type { Resolver, TargetPolicy } from '../../../src/platform/net/address-policy';
import { cloneRepo, CloneError } from '../../../src/services/workspaces/clones/repo-clone';
import { bareRepo, gitDaemon, gitHttpServer, type GitHttpServer } from '../../helpers/git';

let root = '';
let http: GitHttpServer;
let daemon: Awaited<ReturnType<typeof gitDaemon>>;
const queue = createBoundedQueue({ concurrency: 2, maxWaiting: 2 });
const policy: TargetPolicy = { denyPrivate: false, deny: { cidrs: ['127.0.0.2/32'] } };

beforeAll(async () => {
  root = bareRepo('proj', { 'README.md': 'pinned\n' });
  http = gitHttpServer(root);
  daemon = await gitDaemon(root);
});
afterAll(() => {
  http?.stop();
  daemon?.stop();
});

/** Answers `answers` in turn, round and round; counts its calls. */
function rebinding(answers: string[]) {
  const r: { calls: number; resolve: Resolver } = { calls: 0, resolve: async () => [{ address: answers[r.calls++ % answers.length]!, family: 4 }] };
  return r;
}

const clone = (url: string, resolve: Resolver) =>
  cloneRepo({ url, timeoutMs: 30_000, maxBytes: 64 * 1024 * 1024, policy, ticket: queue.admit()!, resolve, searchPath: process.env.PATH ?? '/usr/bin:/bin' });

test('an http:// clone of a name is made from the checked address, the name kept as Host', async () => {
  const dns = rebinding(['127.0.0.1', '127.0.0.2']);
  const before = http.seen.length;
  const done = await clone(`http://repo.test:${http.port}/proj.git`, dns.resolve);
  try {
    expect(readFileSync(join(done.dir, 'README.md'), 'utf8')).toBe('pinned\n');
    // One lookup, by Keel: git asked no resolver (the next answer, 127.0.0.2, was never given out).
    expect(dns.calls).toBe(1);
    expect(http.seen.length).toBeGreaterThan(before);
    expect(new Set(http.seen.slice(before).map((r) => r.headers.host))).toEqual(new Set([`repo.test:${http.port}`]));
  } finally {
    done.cleanup();
  }
}, 60_000);

test('a git:// clone of a name is made from the checked address', async () => {
  const dns = rebinding(['127.0.0.1', '127.0.0.2']);
  const done = await clone(`git://repo.test:${daemon.port}/proj.git`, dns.resolve);
  try {
    expect(existsSync(join(done.dir, 'README.md'))).toBe(true);
    expect(dns.calls).toBe(1);
  } finally {
    done.cleanup();
  }
}, 60_000);

test('a name resolving to an address Keel keeps out of reach is refused before git runs', async () => {
  const before = http.seen.length;
  const err = await clone(`http://repo.test:${http.port}/proj.git`, rebinding(['127.0.0.2']).resolve).catch((e) => e);
  expect(err).toBeInstanceOf(CloneError);
  expect(err.message).toContain('git clone refused');
  expect(http.seen.length).toBe(before);
});

test('with a git older than 2.37 (which would look the name up again) an http(s) clone of a name is refused; an address still clones', async () => {
  // A git that calls itself 2.30 and is otherwise the real one: the version is all Keel asks of it.
  const real = Bun.which('git')!;
  const bin = mkdtempSync(join(tmpdir(), 'keel-old-git-'));
  writeFileSync(join(bin, 'git'), `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "git version 2.30.2"; exit 0; fi\nexec ${real} "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  const searchPath = `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`;
  const old = (url: string) => cloneRepo({ url, timeoutMs: 30_000, maxBytes: 64 * 1024 * 1024, policy, ticket: queue.admit()!, resolve: rebinding(['127.0.0.1']).resolve, searchPath });
  try {
    const before = http.seen.length;
    const err = await old(`http://repo.test:${http.port}/proj.git`).catch((e) => e);
    expect(err).toBeInstanceOf(CloneError);
    expect(err.message).toContain('older than 2.37');
    expect(http.seen.length).toBe(before);
    const byAddress = await old(`http://127.0.0.1:${http.port}/proj.git`);
    expect(readFileSync(join(byAddress.dir, 'README.md'), 'utf8')).toBe('pinned\n');
    byAddress.cleanup();
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
}, 60_000);
