// POST /library/scans and GET /library/scans/{id}, behind the Bearer guard (policy resource:asset:scan).
import { Elysia } from 'elysia';
import { GUARD_CODES, type BearerGuard } from '../../../platform/http/bearer-guard';
import { LibraryScanAcceptedSchema, LibraryScanRequestSchema } from '../../../platform/bus/library-shapes';
import { LibraryScanSchema, ScanIdParams } from './library.model';
import type { LibraryService } from './library.service';
import { catalogOperation as op } from '../catalog.errors';

export function libraryRoutes(library: LibraryService, guard: BearerGuard) {
  return new Elysia({ detail: { tags: ['library'], security: [{ bearer: [] }] } })
    .use(guard)
    .post(
      '/library/scans',
      async ({ body, set }) => {
        set.status = 202;
        return library.startScan(body);
      },
      {
        policy: 'resource:asset:scan',
        rateLimit: 'scan',
        body: LibraryScanRequestSchema,
        response: { 202: LibraryScanAcceptedSchema },
        detail: { ...op('startLibraryScan', [...GUARD_CODES, 'rate-limited', 'CATALOG_PATH_REFUSED', 'CATALOG_FOLDER_NOT_FOUND', 'CATALOG_NO_MEDIA_ROOTS', 'BUS_NO_ANSWERER', 'BUS_TIMEOUT']),
          summary: 'Queue a library scan of a folder (or of every media root)',
          description:
            'Runs as a job of the workers service. While a scan of the same folders is still queued, the same scan is ' +
            'answered again (one pending scan per folder). Unchanged files (same size and mtime) are not probed again; ' +
            'files gone from disk are marked unavailable, never deleted; a root that is missing or empty fails the scan ' +
            'and marks nothing. Domain codes: CATALOG_PATH_REFUSED (422), CATALOG_FOLDER_NOT_FOUND (404), ' +
            'CATALOG_NO_MEDIA_ROOTS (503), BUS_NO_ANSWERER (503: no workers service), BUS_TIMEOUT (504).',
        },
      },
    )
    .get('/library/scans/:id', ({ params }) => library.getScan(params.id), {
      policy: 'resource:asset:scan',
      params: ScanIdParams,
      response: { 200: LibraryScanSchema },
      detail: { ...op('getLibraryScan', [...GUARD_CODES, 'CATALOG_SCAN_NOT_FOUND']), summary: 'A library scan: status and counts' },
    });
}
