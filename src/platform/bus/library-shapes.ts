// The library shapes that travel both on the bus (cmd.library.scan, qry.sources.resolve) and over
// HTTP (POST/GET /library/scans), declared once as t.*: subjects.ts takes their types, the
// catalog's library.model.ts their schemas.
import { t, type Static } from 'elysia';

export const LibraryScanRequestSchema = t.Object({
  path: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: 'folder relative to a media root; omitted: every root' })),
  root: t.Optional(t.Integer({ minimum: 0, maximum: 63, description: 'index of the media root; omitted: every root holding the folder' })),
});

export const LIBRARY_SCAN_STATUSES = ['queued', 'running', 'done', 'failed'] as const;
export const LibraryScanStatusSchema = t.UnionEnum(LIBRARY_SCAN_STATUSES);

export const LibraryScanAcceptedSchema = t.Object({ id: t.String(), status: LibraryScanStatusSchema });

export const LibraryScanCountsSchema = t.Object({
  seen: t.Number({ description: 'media files the walk found' }),
  added: t.Number({ description: 'new files, probed and indexed' }),
  changed: t.Number({ description: 'known files whose size or mtime changed, probed again' }),
  unchanged: t.Number({ description: 'same size and mtime: not probed' }),
  offline: t.Number({ description: 'known files the walk did not find: marked unavailable, never deleted' }),
  failed: t.Number({ description: 'files the media engine could not read (probed again next scan)' }),
});

/** Where an asset can be read: a file under a media root (CONTRACT.md, "Library scans and sources"). */
export const SourceBindingSchema = t.Object({
  id: t.String(),
  assetId: t.String(),
  kind: t.Literal('file'),
  root: t.Number({ description: 'index of the media root in APP_MEDIA_ROOTS' }),
  path: t.String({ description: 'relative to the root' }),
  available: t.Boolean(),
  checkedAt: t.Number({ description: 'Unix epoch ms of the last time a scan or an index saw (or missed) the file' }),
});

export type LibraryScanRequest = Static<typeof LibraryScanRequestSchema>;
export type LibraryScanStatus = Static<typeof LibraryScanStatusSchema>;
export type LibraryScanAccepted = Static<typeof LibraryScanAcceptedSchema>;
export type LibraryScanCounts = Static<typeof LibraryScanCountsSchema>;
export type SourceBinding = Static<typeof SourceBindingSchema>;
