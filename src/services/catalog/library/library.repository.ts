// Every query of library scans: the scans' rows, the files as the last scan left them (upserts,
// the batch compare's read and marks, the sweep's range), and the catalog assets a scan consults
// (their sidecar signatures, whether one exists at a path). A query takes `tx` inside a transaction.
import { and, count, eq, gte, inArray, isNull, lt, ne, or, sql } from 'drizzle-orm';
import type { LibraryScanCounts, ScanTarget } from '../../../platform/bus/subjects';
import type { Orm, Store } from '../../../platform/store';
import { catalogTables } from '../catalog.tables';
import { libraryTables } from './library.tables';

type Tx = Orm;
export type FileRecord = { root: number; path: string; assetId: string | null; sizeBytes: number; mtimeMs: number; available: boolean; seenScan: string; outcome: string; checkedAt: number };

/** Paths per UPDATE when many files are marked at once (well under both databases' parameter limits). */
const PATHS_PER_UPDATE = 1000;

export function createLibraryRepository(store: Store) {
  const db = store.orm;
  const { libraryFiles, libraryScans } = libraryTables(store.dialect);
  const { catalogAssets } = catalogTables(store.dialect);
  const at = (root: number, path: string) => and(eq(libraryFiles.root, root), eq(libraryFiles.path, path));

  return {
    transaction: <T>(body: (tx: Tx) => Promise<T>) => store.transaction(body),

    // Scans
    scan: async (id: string) => (await db.select().from(libraryScans).where(eq(libraryScans.id, id)))[0],
    async insertScan(row: { id: string; status: string; targets: ScanTarget[]; createdAt: number }): Promise<void> {
      await db.insert(libraryScans).values(row);
    },
    async deleteScan(id: string): Promise<void> {
      await db.delete(libraryScans).where(eq(libraryScans.id, id));
    },
    async updateScan(id: string, fields: Partial<{ jobId: string; status: string; startedAt: number | null; finishedAt: number | null; error: string | null; counts: LibraryScanCounts }>): Promise<void> {
      await db.update(libraryScans).set(fields).where(eq(libraryScans.id, id));
    },
    /** How many files the scan saw, by outcome. */
    outcomesOf: (scanId: string) =>
      db.select({ outcome: libraryFiles.outcome, n: count() }).from(libraryFiles).where(eq(libraryFiles.seenScan, scanId)).groupBy(libraryFiles.outcome),

    // Files
    file: async (root: number, path: string) => (await db.select().from(libraryFiles).where(at(root, path)))[0],
    /** Writes the file's row; a null assetId keeps the one it had (a failed probe). */
    async recordFile(row: FileRecord): Promise<void> {
      await db
        .insert(libraryFiles)
        .values(row)
        .onConflictDoUpdate({ target: [libraryFiles.root, libraryFiles.path], set: { ...row, assetId: sql`coalesce(excluded.asset_id, ${libraryFiles.assetId})` } });
    },
    /** The rows of these paths on the root, as the last scan left them. */
    filesAt: (tx: Tx, root: number, paths: string[]) => {
      const f = libraryFiles;
      return paths.length
        ? tx.select({ path: f.path, assetId: f.assetId, sizeBytes: f.sizeBytes, mtimeMs: f.mtimeMs, available: f.available, seenScan: f.seenScan }).from(f).where(and(eq(f.root, root), inArray(f.path, paths)))
        : Promise.resolve([]);
    },
    /**
     * Known files of the root below `folder` ('' for all) that no scan checked since `before` and that
     * `scanId` has not seen: the candidates of its sweep.
     */
    unseenBelow: (tx: Tx, root: number, folder: string, scanId: string, before: number) =>
      tx
        .select({ path: libraryFiles.path, assetId: libraryFiles.assetId, available: libraryFiles.available })
        .from(libraryFiles)
        .where(
          and(
            eq(libraryFiles.root, root),
            lt(libraryFiles.checkedAt, before),
            or(isNull(libraryFiles.seenScan), ne(libraryFiles.seenScan, scanId)),
            // Below the folder: '/' and '0' are neighbours in byte order, so this is a range of the index.
            folder === '' ? undefined : and(gte(libraryFiles.path, `${folder}/`), lt(libraryFiles.path, `${folder}0`)),
          ),
        ),
    /** Sets `fields` on the root's files at `paths`, in batches. */
    async markFiles(tx: Tx, root: number, paths: string[], fields: { seenScan: string; outcome: string; available: boolean; checkedAt: number }): Promise<void> {
      for (let i = 0; i < paths.length; i += PATHS_PER_UPDATE) {
        await tx.update(libraryFiles).set(fields).where(and(eq(libraryFiles.root, root), inArray(libraryFiles.path, paths.slice(i, i + PATHS_PER_UPDATE))));
      }
    },

    // The catalog's assets, read only
    /** The sidecar signature each of these assets was indexed with. */
    async sidecarSignatures(tx: Tx, assetIds: string[]): Promise<Map<string, string>> {
      if (!assetIds.length) return new Map();
      return new Map((await tx.select({ id: catalogAssets.id, sig: catalogAssets.localSig }).from(catalogAssets).where(inArray(catalogAssets.id, assetIds))).map((a) => [a.id, a.sig]));
    },
    assetExistsAt: async (root: number, path: string) =>
      (await db.select({ id: catalogAssets.id }).from(catalogAssets).where(and(eq(catalogAssets.root, root), eq(catalogAssets.path, path)))).length > 0,
  };
}
