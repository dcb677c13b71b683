// The `minimal` template's image, built offline: a root filesystem made of the host's statically
// linked busybox (Debian's busybox-static) and its applet links, a non-root user `keel` (1000:1000),
// /workspace, /tmp and /home/keel, imported into the engine with `docker import`. No registry needed.
import { readFileSync } from 'node:fs';
import { tarArchive, type TarEntry } from './tar';
import type { Engine } from '../engine/engine';

export const MINIMAL_IMAGE = 'keel/minimal:1';
// :2 since its code server asks for the workspace's secret (:1 images serve anyone: never reuse them).
export const BUN_IMAGE = 'keel/bun-typescript:2';

/** True when the ELF file has no program interpreter, i.e. runs without the host's libraries. */
function isStaticElf(bin: Buffer): boolean {
  if (bin.readUInt32BE(0) !== 0x7f454c46 || bin[4] !== 2) return false; // ELF64 only
  const phoff = Number(bin.readBigUInt64LE(0x20));
  const phentsize = bin.readUInt16LE(0x36);
  const phnum = bin.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) if (bin.readUInt32LE(phoff + i * phentsize) === 3) return false; // PT_INTERP
  return true;
}

async function appletPaths(busybox: string): Promise<string[]> {
  const p = Bun.spawn([busybox, '--list-full'], { stdout: 'pipe', stderr: 'ignore' });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`${busybox} --list-full failed`);
  return out.split('\n').map((s) => s.trim()).filter((s) => s && !s.startsWith('/') && !s.includes('..'));
}

/** The root filesystem tar of the minimal image. */
export async function minimalRootfs(busybox: string): Promise<Buffer> {
  return await tarArchive(await minimalRootfsEntries(busybox));
}

/** The minimal root filesystem as tar entries, which other offline images (bun-typescript) build on. */
export async function minimalRootfsEntries(busybox: string): Promise<TarEntry[]> {
  let bin: Buffer;
  try {
    bin = readFileSync(busybox);
  } catch {
    throw new Error(`${busybox} is missing: install Debian's busybox-static`);
  }
  if (!isStaticElf(bin)) throw new Error(`${busybox} is not statically linked: install Debian's busybox-static`);
  const dir = (path: string, mode = 0o755, uid = 0): TarEntry => ({ type: 'dir', path, mode, uid, gid: uid });
  const file = (path: string, text: string, mode = 0o644): TarEntry => ({ type: 'file', path, mode, data: new TextEncoder().encode(text) });
  const entries: TarEntry[] = [
    ...['bin', 'sbin', 'usr', 'usr/bin', 'usr/sbin', 'etc', 'dev', 'proc', 'sys', 'var', 'home'].map((d) => dir(d)),
    dir('root', 0o700),
    dir('tmp', 0o1777),
    dir('var/tmp', 0o1777),
    dir('home/keel', 0o755, 1000),
    dir('workspace', 0o755, 1000),
    { type: 'file', path: 'bin/busybox', mode: 0o755, data: bin },
    file('etc/passwd', 'root:x:0:0:root:/root:/bin/sh\nkeel:x:1000:1000:keel:/home/keel:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n'),
    file('etc/group', 'root:x:0:\nkeel:x:1000:\nnogroup:x:65534:\n'),
    file('etc/hosts', '127.0.0.1 localhost\n'),
    file('etc/os-release', 'NAME="Keel minimal (busybox)"\nID=keel-minimal\n'),
  ];
  for (const path of await appletPaths(busybox)) if (path !== 'bin/busybox') entries.push({ type: 'symlink', path, target: '/bin/busybox' });
  return entries;
}

/** Imports the minimal image into the engine as `ref` (replacing the tag if it exists). */
export async function buildMinimalImage(engine: Engine, ref: string, busybox: string): Promise<void> {
  const rootfs = await minimalRootfs(busybox);
  await engine.importImage(rootfs, ref, [
    'ENV PATH=/bin:/usr/bin:/sbin:/usr/sbin',
    'ENV HOME=/home/keel',
    'USER 1000:1000',
    'WORKDIR /workspace',
    'LABEL dev.keel.image=minimal',
    'CMD ["/bin/sh"]',
  ]);
}
