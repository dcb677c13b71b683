// Library scans on the catalog side: queue a scan as a workers job, and answer the job's steps
// (begin, compare a batch, index one file, sweep, finish) against the catalog's own tables. The
// catalog owns assets and their availability; the worker only walks the disk.
import { realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { Bus } from '../../../platform/bus/bus';
import type { BusEvents, BusQueries, JobView, LibraryFileStat, LibraryScanAccepted, LibraryScanCounts, LibraryScanRequest, LibraryScanStatus, ScanTarget, WorkerJobs } from '../../../platform/bus/subjects';
import type { Store } from '../../../platform/store';
import { AppError } from '../../../platform/errors';
import { isInside } from '../../../platform/paths';
import { errorFields, newId, type Clock, type Logger } from '../../../platform/runtime';
import { checkRelativePath, noMediaRoots, pathRefused } from '../paths';
import { localSignature } from '../metadata/local-metadata';
import type { LibraryScanView } from './library.model';
import { createLibraryRepository } from './library.repository';
import { CatalogErrors, catalogErrorTable } from '../catalog.errors';

export const scanNotFound = () => CatalogErrors.CATALOG_SCAN_NOT_FOUND('No such library scan');
export const folderNotFound = () =>
  CatalogErrors.CATALOG_FOLDER_NOT_FOUND('No folder exists at the path under the media roots');

export interface LibraryDeps {
  store: Store;
  bus: Bus;
  clock: Clock;
  log: Logger;
  mediaRoots: string[];
  /** The catalog's scan path (POST /scan): probe over the bus, identify, index, publish. */
  scanFile(input: { path: string; root: number }): Promise<{ asset: { id: string; path: string } }>;
}

const ZERO: LibraryScanCounts = { seen: 0, added: 0, changed: 0, unchanged: 0, offline: 0, failed: 0 };

export function createLibrary(deps: LibraryDeps) {
  const { clock } = deps;
  const rows = createLibraryRepository(deps.store);
  /** The file row of (root, path), as the last scan left it. */
  const fileRow = rows.file;

  /** Records what a scan found of a file: the asset it is (kept when null: a failed probe), its size and mtime, the outcome. */
  async function recordFile(root: number, path: string, f: { assetId: string | null; sizeBytes: number; mtimeMs: number; scanId: string; outcome: string }) {
    await rows.recordFile({ root, path, assetId: f.assetId, sizeBytes: f.sizeBytes, mtimeMs: f.mtimeMs, available: true, seenScan: f.scanId, outcome: f.outcome, checkedAt: clock.now() });
  }

  const scanRow = rows.scan;
  async function liveScan(id: unknown) {
    const row = typeof id === 'string' ? await scanRow(id) : undefined;
    if (!row) throw scanNotFound();
    return row;
  }

  async function countsOf(scanId: string): Promise<LibraryScanCounts> {
    const c = { ...ZERO };
    for (const { outcome, n } of (await rows.outcomesOf(scanId)) as { outcome: keyof LibraryScanCounts; n: number }[]) {
      if (outcome in c) c[outcome] += n;
      if (outcome !== 'offline') c.seen += n;
    }
    return c;
  }

  async function publishAvailability(changes: BusEvents['evt.catalog.assetAvailability'][]) {
    for (const e of changes) {
      try {
        await deps.bus.publish('evt.catalog.assetAvailability', e);
      } catch (err) {
        deps.log.warn('evt.catalog.assetAvailability not published', { assetId: e.assetId, ...errorFields(err) });
      }
    }
  }

  /** The folder `raw` on each root that holds it (real paths, relative to the root), or every root. */
  function targetsOf(req: LibraryScanRequest): ScanTarget[] {
    const roots = deps.mediaRoots;
    if (roots.length === 0) throw noMediaRoots();
    if (req.root !== undefined && (!Number.isInteger(req.root) || req.root < 0 || req.root >= roots.length)) {
      throw pathRefused('the root index is not configured');
    }
    const indexes = req.root !== undefined ? [req.root] : roots.map((_, i) => i);
    if (req.path === undefined) return indexes.map((root) => ({ root, folder: '' }));
    if (typeof req.path !== 'string') throw pathRefused('it must be a string');
    const rel = checkRelativePath(req.path);
    const found: ScanTarget[] = [];
    for (const root of indexes) {
      let realRoot: string;
      let real: string;
      try {
        realRoot = realpathSync(roots[root]!);
        real = realpathSync(join(realRoot, rel));
      } catch {
        continue;
      }
      // A folder lies below its root: a path that resolves to the root itself (a symlink to it) is refused too.
      if (real === realRoot || !isInside(realRoot, real)) throw pathRefused('it leaves its media root');
      if (!statSync(real).isDirectory()) throw pathRefused('it does not name a folder');
      found.push({ root, folder: relative(realRoot, real).split(sep).join('/') });
    }
    if (found.length === 0) throw folderNotFound();
    return found;
  }

  /** Queues a scan; the same targets already waiting give that scan back (one pending scan per folder). */
  async function startScan(req: LibraryScanRequest): Promise<LibraryScanAccepted> {
    const targets = targetsOf(req ?? {});
    const id = newId('scn', clock);
    // The row exists before the job can run; a deduplicated or refused submission takes it away again.
    await rows.insertScan({ id, status: 'queued', targets, createdAt: clock.now() });
    let submitted: BusQueries['cmd.workers.submit']['reply'];
    try {
      submitted = await deps.bus.request('cmd.workers.submit', {
        type: 'library.scan',
        key: `library.scan:${targets.map((t) => `${t.root}/${t.folder}`).join('|')}`,
        payload: { scanId: id, targets },
      });
    } catch (e) {
      await rows.deleteScan(id);
      throw e;
    }
    if (submitted.deduplicated) {
      await rows.deleteScan(id);
      const existing = (submitted.job.payload as WorkerJobs['library.scan']).scanId;
      return { id: existing, status: ((await scanRow(existing))?.status ?? 'queued') as LibraryScanStatus };
    }
    await rows.updateScan(id, { jobId: submitted.job.id });
    return { id, status: 'queued' };
  }

  async function getScan(id: string): Promise<LibraryScanView> {
    const row = await liveScan(id);
    const ended = row.status === 'done' || row.status === 'failed';
    return {
      id: row.id,
      status: row.status as LibraryScanStatus,
      counts: ended && row.counts ? ({ ...ZERO, ...row.counts } as LibraryScanCounts) : await countsOf(row.id),
      startedAt: row.startedAt,
      finishedAt: row.finishedAt,
      ...(row.status === 'failed' ? { error: row.error ?? 'the scan failed' } : {}),
    };
  }

  async function begin(scanId: string) {
    const row = await liveScan(scanId);
    await rows.updateScan(scanId, { status: 'running', startedAt: row.startedAt ?? clock.now(), error: null, finishedAt: null });
    return { ok: true as const };
  }

  /** Unchanged files (same size and mtime) are marked seen here; the rest go back to be probed. */
  async function compare(scanId: string, root: number, files: LibraryFileStat[]) {
    await liveScan(scanId);
    const now = clock.now();
    const probe: LibraryFileStat[] = [];
    const returned: BusEvents['evt.catalog.assetAvailability'][] = [];
    const same: string[] = [];
    // One read and one write per batch (at most APP_LIBRARY_BATCH paths), not one per file.
    await rows.transaction(async (tx) => {
      const found = await rows.filesAt(tx, root, files.map((f) => f.path));
      const known = new Map(found.map((r) => [r.path, r]));
      // The sidecars (.nfo, artwork, subtitles) of each unchanged medium as its last scan saw them.
      const sigs = await rows.sidecarSignatures(tx, found.flatMap((r) => (r.assetId ? [r.assetId] : [])));
      let realRoot: string | undefined;
      try {
        realRoot = realpathSync(deps.mediaRoots[root]!);
      } catch {
        realRoot = undefined;
      }
      const folders = new Map<string, Map<string, string>>(); // one listing per folder of the batch
      const sidecarsMoved = (path: string, assetId: string) => realRoot !== undefined && sigs.has(assetId) && localSignature(realRoot, path, folders) !== sigs.get(assetId);
      for (const f of files) {
        const row = known.get(f.path);
        if (row?.seenScan === scanId) continue; // handled by an earlier attempt of this scan
        if (row && row.assetId && row.sizeBytes === f.sizeBytes && row.mtimeMs === f.mtimeMs && !sidecarsMoved(f.path, row.assetId)) {
          same.push(f.path);
          if (!row.available) returned.push({ assetId: row.assetId, root, path: f.path, available: true, at: now });
        } else probe.push(f);
      }
      if (same.length) await rows.markFiles(tx, root, same, { seenScan: scanId, outcome: 'unchanged', available: true, checkedAt: now });
    });
    await publishAvailability(returned);
    return { probe, unchanged: same.length, returned: returned.length };
  }

  /** Probes one new or changed file through the scan path; a file the engine cannot read is `failed`, not an error. */
  async function index(scanId: string, root: number, file: LibraryFileStat): Promise<BusQueries['cmd.library.index']['reply']> {
    await liveScan(scanId);
    const before = await fileRow(root, file.path);
    const existed = await rows.assetExistsAt(root, file.path);
    let assetId: string;
    let path = file.path;
    try {
      const res = await deps.scanFile({ path: file.path, root });
      assetId = res.asset.id;
      path = res.asset.path;
    } catch (e) {
      // The bus failing is the job's problem (it retries); the file failing is this file's outcome.
      if (!(e instanceof AppError) || e.code.startsWith('BUS_')) throw e;
      await recordFile(root, file.path, { assetId: null, sizeBytes: -1, mtimeMs: -1, scanId, outcome: 'failed' });
      return { outcome: 'failed', assetId: null, reason: e.message };
    }
    const outcome = existed ? 'changed' : 'added';
    await recordFile(root, path, { assetId, sizeBytes: file.sizeBytes, mtimeMs: file.mtimeMs, scanId, outcome });
    if (before && !before.available) await publishAvailability([{ assetId, root, path, available: true, at: clock.now() }]);
    return { outcome, assetId };
  }

  /** Known files under the folder this scan did not see are marked unavailable (never deleted). */
  async function sweep(scanId: string, root: number, folder: string, skipped: string[]) {
    const scan = await liveScan(scanId);
    const now = clock.now();
    const spared = (p: string) => skipped.some((d) => p === d || p.startsWith(d + '/'));
    const gone: BusEvents['evt.catalog.assetAvailability'][] = [];
    let offline = 0;
    await rows.transaction(async (tx) => {
      // Rows another scan touched since this one began were seen on disk by it: not this scan's to judge.
      const paths = (await rows.unseenBelow(tx, root, folder, scanId, scan.startedAt ?? now)).filter((r) => !spared(r.path));
      await rows.markFiles(tx, root, paths.map((r) => r.path), { available: false, outcome: 'offline', seenScan: scanId, checkedAt: now });
      offline = paths.length;
      for (const r of paths) if (r.available && r.assetId) gone.push({ assetId: r.assetId, root, path: r.path, available: false, at: now });
    });
    await publishAvailability(gone);
    return { offline };
  }

  async function finish(scanId: string) {
    await liveScan(scanId);
    const counts = await countsOf(scanId);
    await rows.updateScan(scanId, { status: 'done', counts, finishedAt: clock.now(), error: null });
    return { counts };
  }

  /** A scan job that ended without finishing (failed for good, cancelled) fails its scan with the reason. */
  async function onJob(job: JobView) {
    if (job.type !== 'library.scan' || (job.status !== 'failed' && job.status !== 'cancelled')) return;
    const row = await scanRow((job.payload as WorkerJobs['library.scan']).scanId);
    if (!row || row.status === 'done' || row.status === 'failed') return;
    await rows.updateScan(row.id, { status: 'failed', error: job.error ?? job.status, counts: await countsOf(row.id), finishedAt: clock.now() });
  }

  /** Answers the scan job's steps and the bus command that starts a scan; follows the scan jobs' ends. */
  function listen(bus: Bus): () => void {
    const offs = [
      bus.answer('cmd.library.scan', (req) => startScan(req), catalogErrorTable),
      bus.answer('cmd.library.begin', (req) => begin(req.scanId), catalogErrorTable),
      bus.answer('cmd.library.compare', (req) => compare(req.scanId, req.root, req.files), catalogErrorTable),
      bus.answer('cmd.library.index', (req) => index(req.scanId, req.root, req.file), catalogErrorTable),
      bus.answer('cmd.library.sweep', (req) => sweep(req.scanId, req.root, req.folder, req.skipped ?? []), catalogErrorTable),
      bus.answer('cmd.library.finish', (req) => finish(req.scanId), catalogErrorTable),
      bus.consume('catalog-library', 'evt.workers.jobProgress', (e) => onJob(e.job)),
    ];
    return () => offs.forEach((off) => off());
  }

  return { startScan, getScan, begin, compare, index, sweep, finish, listen };
}

export type LibraryService = ReturnType<typeof createLibrary>;
