// Library scans on the catalog side: queue a scan as a workers job, and answer the job's steps
// (begin, compare a batch, index one file, sweep, finish) against the catalog's own tables. The
// catalog owns assets and their availability; the worker only walks the disk.
import { realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { eq } from 'drizzle-orm';
import type { Bus } from '../../../platform/bus/bus';
import type { BusEvents, BusQueries, JobView, LibraryFileStat, LibraryScanAccepted, LibraryScanCounts, LibraryScanRequest, LibraryScanStatus, ScanTarget, WorkerJobs } from '../../../platform/bus/subjects';
import type { Db } from '../../../platform/db';
import { AppError } from '../../../platform/errors';
import '../catalog.errors';
import { isInside } from '../../../platform/paths';
import { errorFields, newId, type Clock, type Logger } from '../../../platform/runtime';
import { checkRelativePath, noMediaRoots, pathRefused } from '../paths';
import type { LibraryScanView } from './library.model';
import { libraryScans } from './library.tables';

export const scanNotFound = () => new AppError('CATALOG_SCAN_NOT_FOUND', 'No such library scan');
export const folderNotFound = () =>
  new AppError('CATALOG_FOLDER_NOT_FOUND', 'No folder exists at the path under the media roots');

export interface LibraryDeps {
  db: Db;
  bus: Bus;
  clock: Clock;
  log: Logger;
  mediaRoots: string[];
  /** The catalog's scan path (POST /scan): probe over the bus, identify, index, publish. */
  scanFile(input: { path: string; root: number }): Promise<{ asset: { id: string; path: string } }>;
}

type FileRow = { asset_id: string | null; size_bytes: number; mtime_ms: number; available: number; seen_scan: string | null };

const ZERO: LibraryScanCounts = { seen: 0, added: 0, changed: 0, unchanged: 0, offline: 0, failed: 0 };

export function createLibrary(deps: LibraryDeps) {
  const { db, clock } = deps;
  const sqlite = db.$client;

  // The hot path of a rescan runs these once per file: prepared once, on the raw driver.
  const q = {
    file: sqlite.prepare('SELECT asset_id, size_bytes, mtime_ms, available, seen_scan FROM library_files WHERE root = ? AND path = ?'),
    unchanged: sqlite.prepare(`UPDATE library_files SET seen_scan = ?, outcome = 'unchanged', available = 1, checked_at = ? WHERE root = ? AND path = ?`),
    assetAt: sqlite.prepare('SELECT id FROM catalog_assets WHERE root = ? AND path = ?'),
    upsert: sqlite.prepare(
      `INSERT INTO library_files (root, path, asset_id, size_bytes, mtime_ms, available, seen_scan, outcome, checked_at)
       VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8)
       ON CONFLICT (root, path) DO UPDATE SET asset_id = COALESCE(?3, asset_id), size_bytes = ?4, mtime_ms = ?5, available = 1,
         seen_scan = ?6, outcome = ?7, checked_at = ?8`,
    ),
    counts: sqlite.prepare('SELECT outcome, COUNT(*) AS n FROM library_files WHERE seen_scan = ? GROUP BY outcome'),
    unseen: sqlite.prepare(
      `SELECT path, asset_id, available FROM library_files
       WHERE root = ?1 AND checked_at < ?2 AND (seen_scan IS NULL OR seen_scan != ?3)
         AND (?4 = '' OR (path >= ?4 || '/' AND path < ?4 || '0'))`,
    ),
    offline: sqlite.prepare(`UPDATE library_files SET available = 0, outcome = 'offline', seen_scan = ?, checked_at = ? WHERE root = ? AND path = ?`),
  };

  const scanRow = (id: string) => db.select().from(libraryScans).where(eq(libraryScans.id, id)).get();
  function liveScan(id: unknown) {
    const row = typeof id === 'string' ? scanRow(id) : undefined;
    if (!row) throw scanNotFound();
    return row;
  }

  function countsOf(scanId: string): LibraryScanCounts {
    const c = { ...ZERO };
    for (const { outcome, n } of q.counts.all(scanId) as { outcome: keyof LibraryScanCounts; n: number }[]) {
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
    db.insert(libraryScans).values({ id, status: 'queued', targets, createdAt: clock.now() }).run();
    let submitted: BusQueries['cmd.workers.submit']['reply'];
    try {
      submitted = await deps.bus.request('cmd.workers.submit', {
        type: 'library.scan',
        key: `library.scan:${targets.map((t) => `${t.root}/${t.folder}`).join('|')}`,
        payload: { scanId: id, targets },
      });
    } catch (e) {
      db.delete(libraryScans).where(eq(libraryScans.id, id)).run();
      throw e;
    }
    if (submitted.deduplicated) {
      db.delete(libraryScans).where(eq(libraryScans.id, id)).run();
      const existing = (submitted.job.payload as WorkerJobs['library.scan']).scanId;
      return { id: existing, status: (scanRow(existing)?.status ?? 'queued') as LibraryScanStatus };
    }
    db.update(libraryScans).set({ jobId: submitted.job.id }).where(eq(libraryScans.id, id)).run();
    return { id, status: 'queued' };
  }

  function getScan(id: string): LibraryScanView {
    const row = liveScan(id);
    const ended = row.status === 'done' || row.status === 'failed';
    return {
      id: row.id,
      status: row.status as LibraryScanStatus,
      counts: ended && row.counts ? ({ ...ZERO, ...row.counts } as LibraryScanCounts) : countsOf(row.id),
      startedAt: row.startedAt,
      finishedAt: row.finishedAt,
      ...(row.status === 'failed' ? { error: row.error ?? 'the scan failed' } : {}),
    };
  }

  function begin(scanId: string) {
    const row = liveScan(scanId);
    db.update(libraryScans)
      .set({ status: 'running', startedAt: row.startedAt ?? clock.now(), error: null, finishedAt: null })
      .where(eq(libraryScans.id, scanId))
      .run();
    return { ok: true as const };
  }

  /** Unchanged files (same size and mtime) are marked seen here; the rest go back to be probed. */
  async function compare(scanId: string, root: number, files: LibraryFileStat[]) {
    liveScan(scanId);
    const now = clock.now();
    const probe: LibraryFileStat[] = [];
    const returned: BusEvents['evt.catalog.assetAvailability'][] = [];
    let unchanged = 0;
    sqlite.transaction(() => {
      for (const f of files) {
        const row = q.file.get(root, f.path) as FileRow | null;
        if (row?.seen_scan === scanId) continue; // handled by an earlier attempt of this scan
        if (row && row.asset_id && row.size_bytes === f.sizeBytes && row.mtime_ms === f.mtimeMs) {
          q.unchanged.run(scanId, now, root, f.path);
          unchanged++;
          if (!row.available) returned.push({ assetId: row.asset_id, root, path: f.path, available: true, at: now });
        } else probe.push(f);
      }
    })();
    await publishAvailability(returned);
    return { probe, unchanged, returned: returned.length };
  }

  /** Probes one new or changed file through the scan path; a file the engine cannot read is `failed`, not an error. */
  async function index(scanId: string, root: number, file: LibraryFileStat): Promise<BusQueries['cmd.library.index']['reply']> {
    liveScan(scanId);
    const before = q.file.get(root, file.path) as FileRow | null;
    const existed = !!(q.assetAt.get(root, file.path) as { id: string } | null);
    let assetId: string;
    let path = file.path;
    try {
      const res = await deps.scanFile({ path: file.path, root });
      assetId = res.asset.id;
      path = res.asset.path;
    } catch (e) {
      // The bus failing is the job's problem (it retries); the file failing is this file's outcome.
      if (!(e instanceof AppError) || e.code.startsWith('BUS_')) throw e;
      q.upsert.run(root, file.path, null, -1, -1, scanId, 'failed', clock.now());
      return { outcome: 'failed', assetId: null, reason: e.message };
    }
    const outcome = existed ? 'changed' : 'added';
    const now = clock.now();
    q.upsert.run(root, path, assetId, file.sizeBytes, file.mtimeMs, scanId, outcome, now);
    if (before && !before.available) await publishAvailability([{ assetId, root, path, available: true, at: now }]);
    return { outcome, assetId };
  }

  /** Known files under the folder this scan did not see are marked unavailable (never deleted). */
  async function sweep(scanId: string, root: number, folder: string, skipped: string[]) {
    const scan = liveScan(scanId);
    const now = clock.now();
    const spared = (p: string) => skipped.some((d) => p === d || p.startsWith(d + '/'));
    const gone: BusEvents['evt.catalog.assetAvailability'][] = [];
    let offline = 0;
    sqlite.transaction(() => {
      // Rows another scan touched since this one began were seen on disk by it: not this scan's to judge.
      const rows = q.unseen.all(root, scan.startedAt ?? now, scanId, folder) as { path: string; asset_id: string | null; available: number }[];
      for (const r of rows) {
        if (spared(r.path)) continue;
        q.offline.run(scanId, now, root, r.path);
        offline++;
        if (r.available && r.asset_id) gone.push({ assetId: r.asset_id, root, path: r.path, available: false, at: now });
      }
    })();
    await publishAvailability(gone);
    return { offline };
  }

  function finish(scanId: string) {
    liveScan(scanId);
    const counts = countsOf(scanId);
    db.update(libraryScans).set({ status: 'done', counts, finishedAt: clock.now(), error: null }).where(eq(libraryScans.id, scanId)).run();
    return { counts };
  }

  /** A scan job that ended without finishing (failed for good, cancelled) fails its scan with the reason. */
  function onJob(job: JobView) {
    if (job.type !== 'library.scan' || (job.status !== 'failed' && job.status !== 'cancelled')) return;
    const row = scanRow((job.payload as WorkerJobs['library.scan']).scanId);
    if (!row || row.status === 'done' || row.status === 'failed') return;
    db.update(libraryScans)
      .set({ status: 'failed', error: job.error ?? job.status, counts: countsOf(row.id), finishedAt: clock.now() })
      .where(eq(libraryScans.id, row.id))
      .run();
  }

  /** Answers the scan job's steps and the bus command that starts a scan; follows the scan jobs' ends. */
  function listen(bus: Bus): () => void {
    const offs = [
      bus.answer('cmd.library.scan', (req) => startScan(req)),
      bus.answer('cmd.library.begin', (req) => begin(req.scanId)),
      bus.answer('cmd.library.compare', (req) => compare(req.scanId, req.root, req.files)),
      bus.answer('cmd.library.index', (req) => index(req.scanId, req.root, req.file)),
      bus.answer('cmd.library.sweep', (req) => sweep(req.scanId, req.root, req.folder, req.skipped ?? [])),
      bus.answer('cmd.library.finish', (req) => finish(req.scanId)),
      bus.consume('catalog-library', 'evt.workers.jobProgress', (e) => onJob(e.job)),
    ];
    return () => offs.forEach((off) => off());
  }

  return { startScan, getScan, begin, compare, index, sweep, finish, listen };
}

export type LibraryService = ReturnType<typeof createLibrary>;
