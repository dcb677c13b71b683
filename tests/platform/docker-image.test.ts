// The Docker image's two safety rules (docs/operations.md#the-docker-image): Keel never runs as root
// in it, and `docker build .` never sends the data dir (the private engine, api-secret, keel.db) or
// other local state to the engine. The real image cannot be built here (no registry for its base
// images), so the first rule is read from the Dockerfile, and the second is checked by the test engine
// itself: a context laid out like a working copy, built with this repository's .dockerignore.
import { afterAll, expect, test } from 'bun:test';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { docker } from '../helpers/docker';

const repo = join(import.meta.dir, '../..');
const dockerfile = readFileSync(join(repo, 'Dockerfile'), 'utf8');
const lines = dockerfile.split('\n').map((l) => l.trim());
const tag = `keel-test-context-${process.pid}-${Date.now()}`;
const ctx = mkdtempSync(join(tmpdir(), 'keel-context-'));
afterAll(() => {
  docker('image', 'rm', '-f', tag);
  rmSync(ctx, { recursive: true, force: true });
});

test('the image runs Keel as the keel user, set after everything root must do', () => {
  const finalStage = lines.slice(lines.findLastIndex((l) => l.startsWith('FROM ')));
  const users = finalStage.filter((l) => l.startsWith('USER '));
  expect(users).toEqual(['USER keel']);
  const userAt = finalStage.indexOf('USER keel');
  expect(finalStage.findLastIndex((l) => l.startsWith('RUN ') || l.startsWith('COPY '))).toBeLessThan(userAt);
  expect(finalStage.findIndex((l) => l.startsWith('ENTRYPOINT'))).toBeGreaterThan(userAt);
  // The data dir the image declares belongs to that user and to no one else.
  expect(dockerfile).toContain('chown keel:keel /data && chmod 0700 /data');
});

test('a build context sent with the .dockerignore holds the sources but no data dir, secret, database, dependencies or history', () => {
  const files: Record<string, string> = {
    'data/api-secret': 'f'.repeat(64),
    'data/keel.db': 'db',
    'data/engine/docker.sock.txt': 'engine root',
    'node_modules/bun/package.json': '{}',
    'dist/keel': 'binary',
    '.git/HEAD': 'ref: refs/heads/main',
    '.env': 'APP_API_SECRET=x',
    'keel.db-wal': 'wal',
    'src/main.ts': 'export {}',
    'templates/minimal/template.json': '{}',
    'package.json': '{}',
    'package-lock.json': '{}',
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(ctx, dirname(path)), { recursive: true });
    writeFileSync(join(ctx, path), text);
  }
  copyFileSync(join(repo, '.dockerignore'), join(ctx, '.dockerignore'));
  // FROM scratch needs no registry: the image is exactly what the context delivered.
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\nCOPY . /ctx/\n');
  const built = docker('build', '-q', '-t', tag, ctx);
  expect(built.code).toBe(0);
  const created = docker('create', tag, '/none');
  expect(created.code).toBe(0);
  const tar = Bun.spawnSync(['tar', '-t'], { stdin: Bun.spawnSync(['docker', 'export', created.stdout], { env: process.env }).stdout });
  docker('rm', created.stdout);
  const listed = tar.stdout.toString().split('\n').filter((l) => l.startsWith('ctx/') && !l.endsWith('/')).sort();
  expect(listed).toEqual(['ctx/.dockerignore', 'ctx/Dockerfile', 'ctx/package-lock.json', 'ctx/package.json', 'ctx/src/main.ts', 'ctx/templates/minimal/template.json']);
});
