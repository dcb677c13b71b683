// The OpenSubtitles hash ("fastHash"): file size plus the first and last 64 KiB read as little-endian
// uint64 words, summed modulo 2^64, as 16 hex digits. BigInt keeps it right past 4 GiB.
import { openRegularFile } from './file-reader';

const CHUNK = 64 * 1024;
const MASK = (1n << 64n) - 1n;

/** Sum of `buf` as little-endian uint64 words (a short last word is zero-padded), modulo 2^64. */
function sumWords(buf: Uint8Array): bigint {
  const padded = new Uint8Array(Math.ceil(buf.length / 8) * 8);
  padded.set(buf);
  const words = new BigUint64Array(padded.buffer, 0, padded.length / 8);
  let sum = 0n;
  for (const w of words) sum = (sum + w) & MASK;
  return sum;
}

/** fastHash and size of a regular file (anything else is refused rather than read). */
export async function fastHash(file: string): Promise<{ hash: string; sizeBytes: number }> {
  const fh = await openRegularFile(file);
  try {
    const size = (await fh.stat()).size;
    const len = Math.min(CHUNK, size);
    const head = new Uint8Array(len);
    const tail = new Uint8Array(len);
    await fh.read(head, 0, len, 0);
    await fh.read(tail, 0, len, size - len);
    const hash = (BigInt(size) + sumWords(head) + sumWords(tail)) & MASK;
    return { hash: hash.toString(16).padStart(16, '0'), sizeBytes: size };
  } finally {
    await fh.close();
  }
}
