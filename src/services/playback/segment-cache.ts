// The segment cache on disk (APP_DATA_DIR/playback-cache): the workers' segment jobs write into it,
// playback serves from it and keeps it under its size bound, least recently served first.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join, relative } from 'node:path';

export function createSegmentCache(opts: { dir: string; maxBytes: number }) {
  mkdirSync(opts.dir, { recursive: true });
  let evicting = false;

  /** Every finished segment with its size and last use (mtime, touched on each serve). */
  function list(): { path: string; size: number; usedMs: number }[] {
    const out: { path: string; size: number; usedMs: number }[] = [];
    for (const asset of readdirSync(opts.dir)) {
      if (asset.startsWith('.')) continue; // .work: attempts in progress
      const dir = join(opts.dir, asset);
      for (const name of readdirSync(dir)) {
        try {
          const st = statSync(join(dir, name));
          out.push({ path: join(dir, name), size: st.size, usedMs: st.mtimeMs });
        } catch {
          // evicted meanwhile
        }
      }
    }
    return out;
  }

  return {
    dir: opts.dir,
    /** Where segment `name` of `assetId` lives, relative to the cache (what the job is told). */
    key: (assetId: string, name: string) => relative(opts.dir, join(opts.dir, assetId, name)),
    pathOf: (key: string) => join(opts.dir, key),
    has: (key: string) => existsSync(join(opts.dir, key)),
    /** Marks a segment as just used, so eviction takes others first. */
    touch(key: string) {
      const now = new Date();
      try {
        utimesSync(join(opts.dir, key), now, now);
      } catch {
        // evicted meanwhile: the next request makes it again
      }
    },
    /** Removes the least recently used segments until the cache is within its bound; `keep` stays. */
    evict(keep: string) {
      if (evicting) return;
      evicting = true;
      try {
        const all = list();
        let total = all.reduce((n, f) => n + f.size, 0);
        if (total <= opts.maxBytes) return;
        const keepPath = join(opts.dir, keep);
        all.sort((a, b) => a.usedMs - b.usedMs);
        for (const f of all) {
          if (total <= opts.maxBytes) break;
          if (f.path === keepPath) continue;
          rmSync(f.path, { force: true });
          total -= f.size;
        }
      } finally {
        evicting = false;
      }
    },
    /** Bytes held now (for the docs' and tests' view of the bound). */
    bytes: () => list().reduce((n, f) => n + f.size, 0),
  };
}

export type SegmentCache = ReturnType<typeof createSegmentCache>;
