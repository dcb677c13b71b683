// Positioned reads on an open file, shared by the container index parsers.
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/**
 * Opens a file for reading only if it is a regular file. The path was checked earlier, but it may
 * have become a FIFO since: a blocking open would then wait for a writer forever, holding a thread.
 */
export async function openRegularFile(file: string): Promise<FileHandle> {
  const fh = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!(await fh.stat()).isFile()) {
    await fh.close();
    throw Object.assign(new Error('not a regular file'), { code: 'EINVAL' });
  }
  return fh;
}

export interface ByteSource {
  size: number;
  read(pos: number, len: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

export async function openByteSource(file: string): Promise<ByteSource> {
  const fh = await openRegularFile(file);
  const size = (await fh.stat()).size;
  return {
    size,
    async read(pos, len) {
      const n = Math.max(0, Math.min(len, size - pos));
      const buf = new Uint8Array(n);
      if (n > 0) await fh.read(buf, 0, n, pos);
      return buf;
    },
    close: () => fh.close(),
  };
}

/** A ByteSource over bytes in memory (tests build container structures this way). */
export function bufferSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: async (pos, len) => bytes.slice(pos, Math.min(bytes.length, pos + len)),
    close: async () => {},
  };
}
