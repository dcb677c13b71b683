// The `bun-typescript` template's image. Where a registry answers it is built from
// templates/bun-typescript/Dockerfile (Bun, git, code-server). Where none answers it is made from
// parts this machine has, with no pull at all: the minimal root filesystem (busybox-static), the
// bun binary npm installed (node_modules), the C library files that bun needs as `ldd` names them
// on the host, git with its libraries (so `git` works inside; repo clones still run on the host),
// the host's CA bundle, and a small bun HTTP server standing in for code-server on its port.
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { arch } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { tarArchive, type TarEntry } from './tar';
import { minimalRootfsEntries } from './minimal-image';
import type { Engine } from '../engine/engine';

const REPO_ROOT = resolve(import.meta.dir, '../../../..');
/** The checkout's templates folder: APP_TEMPLATES_DIR's default (a compiled Keel binary has none beside it). */
export const DEFAULT_TEMPLATES_DIR = join(REPO_ROOT, 'templates');

/** Where the offline image takes bun from, first found wins (`bunPath`, from APP_BUN_PATH, overrides them all). */
export function bunCandidates(bunPath?: string): string[] {
  const cpu = arch() === 'arm64' ? 'aarch64' : 'x64';
  const roots = [...new Set([REPO_ROOT, process.cwd()])];
  return [
    ...(bunPath ? [bunPath] : []),
    // npm's bun package moves its platform package's binary into bun/bin on install; either may hold it.
    ...roots.flatMap((r) => [`${r}/node_modules/@oven/bun-linux-${cpu}/bin/bun`, `${r}/node_modules/@oven/bun-linux-${cpu}-baseline/bin/bun`, `${r}/node_modules/bun/bin/bun.exe`]),
    // Running under bun itself (not a compiled Keel binary, whose execPath is Keel).
    ...(/^bun(\.exe)?$/.test(basename(process.execPath)) ? [process.execPath] : []),
  ];
}

export function findBun(bunPath?: string): string {
  for (const c of bunCandidates(bunPath)) {
    try {
      if (statSync(c).isFile() && readFileSync(c).subarray(0, 4).toString('latin1') === '\x7fELF') return c;
    } catch {
      // not there: next
    }
  }
  throw new Error('no bun binary found for the offline bun-typescript image: run `npm install` in the Keel checkout, or set APP_BUN_PATH');
}

/** The shared libraries an ELF file loads, as absolute host paths (the loader included), from `ldd`. */
export function sharedLibraries(elf: string): string[] {
  const r = Bun.spawnSync(['ldd', elf], { stdout: 'pipe', stderr: 'pipe' });
  const out = r.stdout.toString();
  if (/not a dynamic executable|statically linked/.test(out + r.stderr.toString())) return [];
  if (r.exitCode !== 0) throw new Error(`ldd ${elf} failed: ${r.stderr.toString().trim().slice(0, 200)}`);
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    if (/not found/.test(line)) throw new Error(`${elf} needs ${line.trim().split(' ')[0]}, which this machine lacks`);
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]!);
  }
  return libs;
}

/** A file of the host placed at `path` in the image (symlinks followed: the image gets the content). */
function hostFile(path: string, from = path, mode?: number): TarEntry {
  const real = realpathSync(from);
  return { type: 'file', path: path.replace(/^\/+/, ''), mode: mode ?? statSync(real).mode & 0o777, data: readFileSync(real) };
}

/** Directory entries for every parent of the given paths that the entries do not have yet. */
function parents(entries: TarEntry[]): TarEntry[] {
  const have = new Set(entries.filter((e) => e.type === 'dir').map((e) => e.path.replace(/\/$/, '')));
  const add: TarEntry[] = [];
  for (const e of entries) {
    for (let d = dirname(e.path); d !== '.' && d !== '/' && !have.has(d); d = dirname(d)) {
      have.add(d);
      add.push({ type: 'dir', path: d, mode: 0o755 });
    }
  }
  return add.sort((a, b) => a.path.length - b.path.length);
}

export interface OfflineParts {
  busybox: string;
  bun: string;
  /** git and the helpers it runs for http(s) remotes, when the host has them. */
  git: string[];
  caBundle?: string;
  /** The templates folder, which holds the code-server stand-in. */
  templatesDir: string;
}

/** This machine's parts, from the workspaces configuration (APP_BUSYBOX_PATH, APP_BUN_PATH, APP_TEMPLATES_DIR). */
export function offlineParts(settings: { busyboxPath: string; bunPath: string | undefined; templatesDir: string }): OfflineParts {
  const git = ['/usr/bin/git', '/usr/lib/git-core/git-remote-http'].filter((p) => existsSync(p));
  const ca = '/etc/ssl/certs/ca-certificates.crt';
  return { busybox: settings.busyboxPath, bun: findBun(settings.bunPath), git, caBundle: existsSync(ca) ? ca : undefined, templatesDir: settings.templatesDir };
}

/** The offline image's root filesystem: minimal + bun + its C library + git + the code-server stand-in. */
export async function bunOfflineRootfs(parts: OfflineParts): Promise<Buffer> {
  const base = await minimalRootfsEntries(parts.busybox);
  const added: TarEntry[] = [hostFile('/usr/local/bin/bun', parts.bun, 0o755), { type: 'symlink', path: 'usr/local/bin/bunx', target: 'bun' }];
  const libs = new Set<string>(sharedLibraries(parts.bun));
  if (parts.git.length) {
    added.push(hostFile('/usr/bin/git', parts.git[0]!, 0o755));
    // The builtins other processes call by name (a clone runs git-upload-pack on the other side).
    for (const b of ['git-upload-pack', 'git-receive-pack', 'git-upload-archive']) {
      added.push({ type: 'symlink', path: `usr/bin/${b}`, target: 'git' }, { type: 'symlink', path: `usr/lib/git-core/${b}`, target: '/usr/bin/git' });
    }
    for (const helper of parts.git.slice(1)) {
      added.push(hostFile(helper, helper, 0o755));
      if (helper.endsWith('git-remote-http')) added.push({ type: 'symlink', path: `${helper.slice(1)}s`, target: 'git-remote-http' });
    }
    for (const p of parts.git) for (const l of sharedLibraries(p)) libs.add(l);
    const templates = '/usr/share/git-core/templates';
    if (existsSync(templates)) added.push({ type: 'dir', path: templates.slice(1), mode: 0o755 });
  }
  for (const l of libs) added.push(hostFile(l));
  if (parts.caBundle) added.push(hostFile('/etc/ssl/certs/ca-certificates.crt', parts.caBundle, 0o644));
  const server = readFileSync(join(parts.templatesDir, 'bun-typescript', 'code-server.ts'));
  added.push({ type: 'file', path: 'opt/keel/code-server.ts', mode: 0o644, data: server });
  const entries = [...base, ...added];
  return await tarArchive([...base, ...parents(entries), ...added]);
}

const OFFLINE_CHANGES = [
  'ENV PATH=/usr/local/bin:/bin:/usr/bin:/sbin:/usr/sbin',
  'ENV HOME=/home/keel',
  'ENV GIT_EXEC_PATH=/usr/lib/git-core',
  'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
  'USER 1000:1000',
  'WORKDIR /workspace',
  'LABEL dev.keel.image=bun-typescript dev.keel.build=offline',
  'CMD ["/bin/sh"]',
];

/** Imports the offline bun-typescript image as `ref` (no registry involved). */
export async function buildBunOfflineImage(engine: Engine, ref: string, parts: OfflineParts): Promise<void> {
  await engine.importImage(await bunOfflineRootfs(parts), ref, OFFLINE_CHANGES);
}

/** Builds templates/bun-typescript/Dockerfile (needs a registry and the internet). */
export async function buildBunDockerfileImage(engine: Engine, ref: string, templatesDir: string): Promise<void> {
  const dir = join(templatesDir, 'bun-typescript');
  const entries: TarEntry[] = readdirSync(dir).map((name) => ({ type: 'file', path: name, mode: 0o644, data: readFileSync(join(dir, name)) }));
  await engine.buildImage(await tarArchive(entries), ref);
}

/**
 * True when Docker Hub's registry answers at all (any HTTP status) within `timeoutMs`: cheap, and
 * never a hang on a machine without the internet (DNS failure or the timeout ends it).
 */
export async function registryAnswers(url = 'https://registry-1.docker.io/v2/', timeoutMs = 2500): Promise<boolean> {
  try {
    await fetch(url, { method: 'GET', signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    return true;
  } catch {
    return false;
  }
}
