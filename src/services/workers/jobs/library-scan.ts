// The library scan job: checks every target first (a missing or empty root fails the scan and marks
// nothing), walks each folder in batches, lets the catalog sort unchanged files from new and changed
// ones, has the catalog probe only those (a bounded number at once per root), then has the catalog
// mark what the walk did not find as unavailable. Files stay in the catalog's hands throughout:
// this job only reads the disk and talks to the catalog over the bus.
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createBoundedQueue, type BoundedQueue } from '../../../platform/bounded-queue';
import { WorkersErrors } from '../workers.errors';
import { isInside } from '../../../platform/paths';
import { crawl } from '../crawl';
import type { JobHandler } from './index';

export interface LibraryScanDeps {
  mediaRoots: string[];
  probesPerRoot: number;
  batchSize: number;
  indexTimeoutMs: number;
}

/** Not worth retrying at once: the operator (or the next scheduled scan) has to act. */
const rootProblem = (message: string) => WorkersErrors.LIBRARY_ROOT_UNAVAILABLE(message);

/** The real path of the folder to walk; throws the reason a scan of it must not go on. */
export function checkTarget(mediaRoots: string[], root: number, folder: string): string {
  // The folder itself is not repeated: the reason is read by whoever reads the scan.
  const name = folder ? `the scanned folder on media root ${root}` : `media root ${root}`;
  const base = mediaRoots[root];
  if (base === undefined) throw rootProblem(`media root ${root} is not configured on the worker`);
  let realRoot: string;
  let real: string;
  try {
    realRoot = realpathSync(base);
    real = realpathSync(folder ? join(realRoot, folder) : realRoot);
  } catch {
    throw rootProblem(`${name} is missing; nothing was marked unavailable`);
  }
  if (!isInside(realRoot, real)) throw rootProblem(`${name} leaves its media root`);
  let entries: string[];
  try {
    if (!statSync(real).isDirectory()) throw new Error('not a directory');
    entries = readdirSync(real).filter((n) => !n.startsWith('.'));
  } catch {
    throw rootProblem(`${name} cannot be read; nothing was marked unavailable`);
  }
  // An empty mount point looks exactly like a library whose files all vanished: refuse to believe it.
  if (entries.length === 0) throw rootProblem(`${name} is empty; nothing was marked unavailable`);
  return realRoot;
}

export function createLibraryScanJob(deps: LibraryScanDeps): JobHandler<'library.scan'> {
  // Shared by every scan this worker runs: the bound is per root, not per job. No probe is turned
  // away (maxWaiting unbounded): a batch simply waits for its turn.
  const probeQueues = new Map<number, BoundedQueue>();
  const limiterFor = (root: number) => {
    let q = probeQueues.get(root);
    if (!q) probeQueues.set(root, (q = createBoundedQueue({ concurrency: deps.probesPerRoot, maxWaiting: Infinity })));
    return <T>(task: () => Promise<T>) => q.admit()!.run(task);
  };

  return {
    type: 'library.scan',
    async run({ job, signal, progress, bus }) {
      const { scanId, targets } = job.payload;
      const realRoots = targets.map((t) => checkTarget(deps.mediaRoots, t.root, t.folder));
      await bus.request('cmd.library.begin', { scanId });
      const figures = { seen: 0, unchanged: 0, probed: 0, added: 0, changed: 0, failed: 0, offline: 0 };

      for (const [i, { root, folder }] of targets.entries()) {
        const skipped: string[] = [];
        const limit = limiterFor(root);
        for await (const files of crawl(realRoots[i]!, folder, { batchSize: deps.batchSize, signal, onSkip: (d) => skipped.push(d) })) {
          const sorted = await bus.request('cmd.library.compare', { scanId, root, files });
          figures.seen += files.length;
          figures.unchanged += sorted.unchanged;
          await Promise.all(
            sorted.probe.map((file) =>
              limit(async () => {
                signal.throwIfAborted();
                const r = await bus.request('cmd.library.index', { scanId, root, file }, { timeoutMs: deps.indexTimeoutMs });
                figures.probed++;
                figures[r.outcome]++;
              }),
            ),
          );
          signal.throwIfAborted();
          await progress({ ...figures });
        }
        // Only after a complete walk: an interrupted one must not read as "everything else vanished".
        const { offline } = await bus.request('cmd.library.sweep', { scanId, root, folder, skipped });
        figures.offline += offline;
      }
      await bus.request('cmd.library.finish', { scanId });
      await progress({ ...figures });
    },
  };
}
