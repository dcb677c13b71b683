// t.* schemas of the library scan API (CONTRACT.md, "Library scans and sources"); the shapes the
// bus shares (request, status, counts) come from platform/bus/library-shapes.ts.
import { t, type Static } from 'elysia';
import { LibraryScanAcceptedSchema, LibraryScanCountsSchema, LibraryScanStatusSchema } from '../../../platform/bus/library-shapes';

/** POST /library/scans's 202, the bus's shape, named here for the document. */
export { LibraryScanAcceptedSchema };

export const LibraryScanSchema = t.Object({
  id: t.String(),
  status: LibraryScanStatusSchema,
  counts: LibraryScanCountsSchema,
  startedAt: t.Nullable(t.Number({ description: 'Unix epoch ms; null while queued' })),
  finishedAt: t.Nullable(t.Number({ description: 'Unix epoch ms; null until done or failed' })),
  error: t.Optional(t.String({ description: 'why the scan failed (status failed only)' })),
});

export const ScanIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });

export type LibraryScanView = Static<typeof LibraryScanSchema>;
