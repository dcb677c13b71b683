// The file watcher (APP_LIBRARY_WATCH): changes under a local media root queue a library scan of
// the folder that changed, after a quiet period, so a copy of a season is one scan, not hundreds.
// The scan does the judging (probe only what changed, offline only after a complete walk); the
// watcher only says where to look. Dedup by folder keeps bursts to one pending scan each.
import { readdirSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { errorFields, type Logger } from '../../../platform/runtime';
import type { LibraryService } from './library.service';

/** The nearest folder of `rel` (a changed path) that exists and holds something: the one to scan. */
export function folderToScan(rootAbs: string, rel: string): string {
  let folder = rel.split('/').slice(0, -1).join('/');
  for (;;) {
    if (!folder) return '';
    try {
      if (readdirSync(join(rootAbs, folder)).some((n) => !n.startsWith('.'))) return folder;
    } catch {
      // gone with what changed: look further up
    }
    folder = folder.split('/').slice(0, -1).join('/');
  }
}

/** Keeps the outermost folders: a scan of `a` covers `a/b`. */
export function outermost(folders: string[]): string[] {
  const sorted = [...new Set(folders)].sort();
  return sorted.filter((f, i) => !sorted.slice(0, i).some((p) => p === '' || f.startsWith(p + '/')));
}

export function watchLibrary(library: LibraryService, mediaRoots: string[], debounceMs: number, log: Logger): () => void {
  // A file being copied is one event per write: events only note the changed path (one per folder),
  // and the disk is asked which folder to scan once per folder, when the quiet period ends.
  const pending = new Map<number, Map<string, string>>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watchers: FSWatcher[] = [];

  const flush = () => {
    timer = undefined;
    for (const [root, changed] of pending) {
      const folders = [...changed.values()].map((rel) => folderToScan(mediaRoots[root]!, rel));
      for (const folder of outermost(folders)) {
        library.startScan(folder ? { root, path: folder } : { root }).then(
          (s) => log.info('watcher queued a library scan', { scanId: s.id, root }),
          (e) => log.warn('watcher could not queue a library scan', { root, ...errorFields(e) }),
        );
      }
    }
    pending.clear();
  };

  mediaRoots.forEach((rootAbs, root) => {
    try {
      const w = watch(rootAbs, { recursive: true }, (_event, name) => {
        if (!name) return;
        const rel = String(name).split('\\').join('/');
        if (rel.split('/').some((s) => s.startsWith('.'))) return;
        let changed = pending.get(root);
        if (!changed) pending.set(root, (changed = new Map()));
        changed.set(rel.slice(0, Math.max(0, rel.lastIndexOf('/'))), rel);
        clearTimeout(timer);
        timer = setTimeout(flush, debounceMs);
      });
      w.on('error', (e) => log.warn('library watcher stopped', { root, ...errorFields(e) }));
      watchers.push(w);
    } catch (e) {
      // A root that is missing now is not watched; scheduled and asked-for scans still cover it.
      log.warn('media root not watched', { root, ...errorFields(e) });
    }
  });
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
