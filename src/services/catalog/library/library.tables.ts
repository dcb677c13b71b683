// The catalog's library tables: what the last scans saw of each file under the media roots, and
// the scans themselves. A file row outlives the file (available = false): assets are never deleted.
import { defineTables } from '../../../platform/db-schema';
import type { LibraryScanCounts, ScanTarget } from '../../../platform/bus/subjects';
import { catalogTables } from '../catalog.tables';

export const libraryTables = defineTables(({ index, integer, table, text, uniqueIndex }, dialect) => {
  const libraryFiles = table(
    'library_files',
    {
      root: integer('root').notNull(),
      /** Relative to the root, as the asset's path. */
      path: text('path').notNull(),
      /** Null when the last probe failed (the file is probed again next scan). */
      assetId: text('asset_id').references(() => catalogTables(dialect).catalogAssets.id, { onDelete: 'cascade' }),
      /** Size and mtime (ms) when last probed or found unchanged: equal values mean "not probed again". */
      sizeBytes: integer('size_bytes').notNull(),
      mtimeMs: integer('mtime_ms').notNull(),
      available: integer('available', { mode: 'boolean' }).notNull(),
      /** The scan that last handled the file, and what it found: added, changed, unchanged, failed or offline. */
      seenScan: text('seen_scan'),
      outcome: text('outcome').notNull(),
      checkedAt: integer('checked_at').notNull(),
    },
    (t) => [
      uniqueIndex('library_files_location').on(t.root, t.path),
      index('library_files_asset').on(t.assetId),
      index('library_files_scan').on(t.seenScan, t.outcome),
    ],
  );

  const libraryScans = table(
    'library_scans',
    {
      id: text('id').primaryKey(),
      /** The workers job running it. */
      jobId: text('job_id'),
      /** queued, running, done or failed. */
      status: text('status').notNull(),
      targets: text('targets', { mode: 'json' }).$type<ScanTarget[]>().notNull(),
      /** The counts, frozen when the scan ends (computed from library_files while it runs). */
      counts: text('counts', { mode: 'json' }).$type<LibraryScanCounts>(),
      error: text('error'),
      createdAt: integer('created_at').notNull(),
      startedAt: integer('started_at'),
      finishedAt: integer('finished_at'),
    },
    (t) => [index('library_scans_job').on(t.jobId)],
  );
  return { libraryFiles, libraryScans };
});

export const { libraryFiles, libraryScans } = libraryTables('sqlite');
