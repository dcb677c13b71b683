// What the SDK tests share: the package packed as users get it (`npm pack` in clients/typescript,
// which builds dist/ first) and installed with `npm` into a fresh Node project. The install is
// offline: the SDK's dependencies (and theirs) are packed from the repository's node_modules and
// installed beside it, so no registry is asked.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dir, '../..');
const SDK_DIR = join(REPO, 'clients/typescript');

export interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs a command (async: the platform answering it lives in this process). */
export async function run(cmd: string[], opts: { cwd: string; env?: Record<string, string | undefined>; stdin?: string; timeoutMs?: number }): Promise<Run> {
  const proc = Bun.spawn(cmd, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdin: opts.stdin !== undefined ? new TextEncoder().encode(opts.stdin) : 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const timer = setTimeout(() => proc.kill(), opts.timeoutMs ?? 60_000);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, out, err };
}

/** The names of `pkg`'s dependencies and theirs, as installed in the repository's node_modules. */
function dependencyClosure(deps: string[], seen = new Set<string>()): Set<string> {
  for (const d of deps) {
    if (seen.has(d)) continue;
    seen.add(d);
    const manifest = JSON.parse(readFileSync(join(REPO, 'node_modules', d, 'package.json'), 'utf8'));
    dependencyClosure(Object.keys(manifest.dependencies ?? {}), seen);
  }
  return seen;
}

let packed: Promise<string[]> | undefined;
/** The SDK's tarball and its dependencies' tarballs (once per process). */
export function packSdk(): Promise<string[]> {
  return (packed ??= (async () => {
    const out = mkdtempSync(join(tmpdir(), 'keel-sdk-pack-'));
    const sdk = await run(['npm', 'pack', '--silent', '--pack-destination', out], { cwd: SDK_DIR });
    if (sdk.code !== 0) throw new Error(`npm pack failed: ${sdk.err}`);
    const tarballs = [join(out, sdk.out.trim().split('\n').at(-1)!)];
    const manifest = JSON.parse(readFileSync(join(SDK_DIR, 'package.json'), 'utf8'));
    for (const dep of dependencyClosure(Object.keys(manifest.dependencies ?? {}))) {
      const r = await run(['npm', 'pack', '--silent', '--pack-destination', out, join(REPO, 'node_modules', dep)], { cwd: out });
      if (r.code !== 0) throw new Error(`npm pack ${dep} failed: ${r.err}`);
      tarballs.push(join(out, r.out.trim().split('\n').at(-1)!));
    }
    return tarballs;
  })());
}

/** A fresh Node project (type: module) with the packed SDK installed by npm; `files` copied in. */
export async function nodeProject(files: string[] = []): Promise<{ dir: string; remove(): void }> {
  const tarballs = await packSdk();
  const dir = mkdtempSync(join(tmpdir(), 'keel-sdk-project-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'sdk-user', private: true, type: 'module' }));
  const npm = await run(['npm', 'install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], { cwd: dir });
  if (npm.code !== 0) throw new Error(`npm install failed: ${npm.err}`);
  for (const f of files) cpSync(join(import.meta.dir, f), join(dir, f.replace(/\.txt$/, '')));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
