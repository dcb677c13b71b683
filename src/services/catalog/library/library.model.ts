// t.* schemas of the library scan API (CONTRACT.md, "Library scans and sources").
import { t } from 'elysia';

export const LibraryScanBody = t.Object({
  path: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: 'folder relative to a media root; omitted: every root' })),
  root: t.Optional(t.Integer({ minimum: 0, maximum: 63, description: 'index of the media root; omitted: every root holding the folder' })),
});

export const LibraryScanStatusSchema = t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('done'), t.Literal('failed')]);

export const LibraryScanAccepted = t.Object({
  id: t.String(),
  status: LibraryScanStatusSchema,
});

export const LibraryScanCountsSchema = t.Object({
  seen: t.Number({ description: 'media files the walk found' }),
  added: t.Number({ description: 'new files, probed and indexed' }),
  changed: t.Number({ description: 'known files whose size or mtime changed, probed again' }),
  unchanged: t.Number({ description: 'same size and mtime: not probed' }),
  offline: t.Number({ description: 'known files the walk did not find: marked unavailable, never deleted' }),
  failed: t.Number({ description: 'files the media engine could not read (probed again next scan)' }),
});

export const LibraryScanSchema = t.Object({
  id: t.String(),
  status: LibraryScanStatusSchema,
  counts: LibraryScanCountsSchema,
  startedAt: t.Nullable(t.Number({ description: 'Unix epoch ms; null while queued' })),
  finishedAt: t.Nullable(t.Number({ description: 'Unix epoch ms; null until done or failed' })),
  error: t.Optional(t.String({ description: 'why the scan failed (status failed only)' })),
});

export const ScanIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });
