// Builds keeld, the workspace daemon (daemon/, Go, standard library only), into daemon/bin/keeld:
// static (CGO off), stripped, reproducible paths. `npm test`, `npm run dev`, `bun run build` and the
// benches call it; a build newer than every source file is kept.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const DAEMON_DIR = join(import.meta.dir, '..', 'daemon');
export const DAEMON_BINARY = join(DAEMON_DIR, 'bin', 'keeld');

export function buildDaemon(): string {
  const sources = readdirSync(DAEMON_DIR).filter((f) => f.endsWith('.go') || f === 'go.mod');
  const newest = Math.max(...sources.map((f) => statSync(join(DAEMON_DIR, f)).mtimeMs));
  if (existsSync(DAEMON_BINARY) && statSync(DAEMON_BINARY).mtimeMs >= newest) return DAEMON_BINARY;
  const r = spawnSync('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', DAEMON_BINARY, '.'], {
    cwd: DAEMON_DIR,
    // Go wants a cache (and a GOPATH) under $HOME; a CI without HOME gets them in the temp dir.
    env: { GOCACHE: join(tmpdir(), 'keel-go-cache'), GOPATH: join(tmpdir(), 'keel-go'), ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GO111MODULE: 'on' },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`building the workspace daemon (go build in daemon/) failed: ${(r.stderr || r.error?.message || '').trim().slice(-500)}`);
  return DAEMON_BINARY;
}

if (import.meta.main) console.log(buildDaemon());
