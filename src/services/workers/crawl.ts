// The library crawl: walks a folder under a media root in batches. Directory entries come with
// their type (readdir with file types: no stat to tell a folder from a file); only media files are
// stat'ed, for the size and mtime a rescan compares. Dot files and symlinks are not followed.
import { lstatSync, statSync, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { LibraryFileStat } from '../../platform/bus/subjects';

/** Extensions a library scan considers; anything else (artwork, .nfo, subtitles) is not an asset of its own. */
export const MEDIA_EXTENSIONS = new Set([
  'mkv', 'mk3d', 'mp4', 'm4v', 'mov', 'avi', 'webm', 'ts', 'm2ts', 'mts', 'wmv', 'flv', 'mpg', 'mpeg', 'vob', 'ogv', '3gp',
  'mka', 'm4a', 'm4b', 'mp3', 'flac', 'ogg', 'oga', 'opus', 'wav', 'aac', 'wma', 'aiff', 'ape', 'wv', 'dts', 'ac3',
]);

export interface CrawlOptions {
  batchSize: number;
  signal?: AbortSignal;
  /** A folder below the start that could not be read: its files are not seen, so the sweep must spare it. */
  onSkip(relDir: string): void;
}

const isMedia = (name: string) => MEDIA_EXTENSIONS.has(extname(name).slice(1).toLowerCase());

function kindOf(d: Dirent, abs: string): 'dir' | 'file' | 'other' {
  if (d.isDirectory()) return 'dir';
  if (d.isFile()) return 'file';
  if (d.isSymbolicLink()) return 'other';
  // Some file systems do not report the type (DT_UNKNOWN): only then does the crawl lstat the entry.
  try {
    const s = lstatSync(abs);
    return s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'other';
  } catch {
    return 'other';
  }
}

/**
 * Yields batches of media files under `folder` ('' for the whole root) of the root whose real path
 * is `rootAbs`, as paths relative to the root. An unreadable start folder throws; an unreadable
 * folder below it is reported to onSkip and passed over.
 */
export async function* crawl(rootAbs: string, folder: string, opts: CrawlOptions): AsyncGenerator<LibraryFileStat[]> {
  const stack = [folder];
  let batch: LibraryFileStat[] = [];
  while (stack.length) {
    opts.signal?.throwIfAborted();
    const rel = stack.pop()!;
    const abs = rel ? join(rootAbs, rel) : rootAbs;
    let entries: Dirent[];
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch (e) {
      if (rel === folder) throw e;
      opts.onSkip(rel);
      continue;
    }
    for (const d of entries) {
      if (d.name.startsWith('.')) continue;
      const childRel = rel ? `${rel}/${d.name}` : d.name;
      const childAbs = join(abs, d.name);
      const kind = kindOf(d, childAbs);
      if (kind === 'dir') stack.push(childRel);
      else if (kind === 'file' && isMedia(d.name)) {
        let s;
        try {
          s = statSync(childAbs);
        } catch {
          continue; // gone between the listing and now: the next scan sees what is there
        }
        batch.push({ path: childRel, sizeBytes: s.size, mtimeMs: Math.trunc(s.mtimeMs) });
        if (batch.length >= opts.batchSize) {
          yield batch;
          batch = [];
        }
      }
    }
  }
  if (batch.length) yield batch;
}
