// Every code the catalog (and its media engine and library scans) answers with beyond the
// platform's, and what it means on the wire. The problem+json renderer and the OpenAPI description
// both read this table: a throw site names a code, never a status. The codes are fixed by the spec.
import { defineErrors, errorFactories, joinErrors } from '../../platform/errors';
import { operationsFor } from '../../platform/http/openapi-errors';
import { busErrorTable, problemErrorTable } from '../../platform/platform.errors';

/** Found by the operator, not by retrying the same request. */
const recoverable = { retryable: false, category: 'recoverable' } as const;

const own = defineErrors({
  CATALOG_WORK_NOT_FOUND: { status: 404, description: 'no such work' },
  CATALOG_EDITION_NOT_FOUND: { status: 404, description: 'no such edition' },
  CATALOG_IMAGE_NOT_FOUND: { status: 404, description: 'the work has no image of that kind (no poster.jpg, folder.jpg, fanart.jpg or embedded cover was found with its media)' },
  CATALOG_IMAGE_UNREADABLE: { status: 422, ...recoverable, description: 'the image file (or the embedded cover) cannot be read or decoded' },
  CATALOG_SCAN_NOT_FOUND: { status: 404, description: 'no such library scan' },
  CATALOG_PATH_NOT_FOUND: { status: 404, ...recoverable, description: 'no file exists at the scan path under the media roots' },
  CATALOG_FOLDER_NOT_FOUND: { status: 404, ...recoverable, description: 'no folder exists at the path under the media roots' },
  CATALOG_BINDING_CONFLICT: { status: 409, description: 'the edition does not belong to the work' },
  CATALOG_REQUEST_INVALID: { status: 422, description: 'qry.catalog.playable needs an assetId of 1 to 128 characters' },
  CATALOG_PATH_REFUSED: { status: 422, description: 'the scan path is absolute, escapes its root or is otherwise refused' },
  CATALOG_FILE_UNREADABLE: { status: 422, ...recoverable, description: 'the file at the scan path cannot be read' },
  CATALOG_NO_MEDIA_ROOTS: { status: 503, ...recoverable, description: 'no media root is configured (APP_MEDIA_ROOTS)' },
  MEDIA_ENGINE_BUSY: { status: 503, retryAfter: 5, description: 'too many probes run or wait; retry later' },
  MEDIA_ENGINE_UNAVAILABLE: { status: 503, ...recoverable, description: 'ffprobe is missing or cannot run' },
  MEDIA_PROBE_TIMEOUT: { status: 504, description: 'ffprobe did not finish within APP_PROBE_TIMEOUT_MS' },
});

/** The catalog's table: the platform's problem codes, the bus's, and the service's own. */
export const catalogErrorTable = joinErrors(problemErrorTable, busErrorTable, own);

/** What the service throws: one factory per code (`CatalogErrors.X(message, details)`), no HTTP in them. */
export const CatalogErrors = errorFactories(catalogErrorTable);
export type CatalogErrorCode = keyof typeof catalogErrorTable;

/** A route's operationId and the codes it answers beyond the platform's (spread into its `detail`). */
export const catalogOperation = operationsFor(catalogErrorTable);
