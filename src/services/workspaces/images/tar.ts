// The one tar writer of the workspaces service, over tar-stream: archives Keel builds itself (the
// offline images' root file systems, ownership and modes exact without root or the host's tar) and
// the stream that carries a cloned repo into a workspace's volume.
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pack, type Headers, type Pack } from 'tar-stream';

export type TarEntry =
  | { type: 'file'; path: string; mode: number; uid?: number; gid?: number; data: Uint8Array }
  | { type: 'dir'; path: string; mode: number; uid?: number; gid?: number }
  | { type: 'symlink'; path: string; target: string; uid?: number; gid?: number };

/** Built archives carry no build time, so the same entries give the same bytes. */
const EPOCH = new Date(0);

/** Adds one entry; resolves once tar-stream has taken it (a file's content included). */
function add(out: Pack, headers: Headers, data?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => out.entry(headers, data ?? Buffer.alloc(0), (err) => (err ? reject(err) : resolve())));
}

/** The archive of `entries`, in memory (root file systems of a few to a hundred MB). */
export async function tarArchive(entries: TarEntry[]): Promise<Buffer> {
  const out = pack();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve, reject) => out.on('end', resolve).on('error', reject));
  for (const e of entries) {
    const owner = { uid: e.uid ?? 0, gid: e.gid ?? 0, mtime: EPOCH };
    if (e.type === 'file') await add(out, { name: e.path, type: 'file', mode: e.mode, ...owner }, Buffer.from(e.data.buffer, e.data.byteOffset, e.data.byteLength));
    else if (e.type === 'dir') await add(out, { name: e.path, type: 'directory', mode: e.mode, ...owner });
    else await add(out, { name: e.path, type: 'symlink', linkname: e.target, mode: 0o777, ...owner });
  }
  out.finalize();
  await ended;
  return Buffer.concat(chunks);
}

/** Streams one file's content into its entry; resolves when the entry is complete. */
function addFile(out: Pack, headers: Headers, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const sink = out.entry(headers, (err) => (err ? reject(err) : resolve()));
    createReadStream(path).on('error', reject).pipe(sink);
  });
}

/**
 * A tar stream of `dir`'s contents (paths relative to it, `./`-less), every entry owned by uid:gid,
 * for the engine's putArchive. Files are streamed, never held whole. Sockets and fifos are skipped.
 * `done` settles when the walk ends: rejected if reading the directory failed.
 */
export function tarDirectory(dir: string, uid: number, gid: number): { stream: Readable; done: Promise<void> } {
  const out = pack();
  async function walk(rel: string): Promise<void> {
    for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
      const name = rel ? `${rel}/${d.name}` : d.name;
      const path = join(dir, name);
      const st = await lstat(path);
      const headers = { name, mode: st.mode & 0o7777, mtime: st.mtime, uid, gid };
      if (st.isDirectory()) {
        await add(out, { ...headers, type: 'directory' });
        await walk(name);
      } else if (st.isSymbolicLink()) await add(out, { ...headers, type: 'symlink', linkname: await readlink(path) });
      else if (st.isFile()) await addFile(out, { ...headers, type: 'file', size: st.size }, path);
    }
  }
  const done = walk('').then(
    () => out.finalize(),
    (e) => {
      out.destroy(e as Error);
      throw e;
    },
  );
  return { stream: out, done };
}
