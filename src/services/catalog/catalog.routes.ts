// The catalog over HTTP: routes and schemas wiring only; the rules live in catalog.service.ts.
// POST /scan sits in its own group behind the Bearer guard (policy resource:asset:scan, scan budget).
import { Elysia, t } from 'elysia';
import { GUARD_CODES, type BearerGuard } from '../../platform/http/bearer-guard';
import { conditionalGet, type HeaderPairs, type ResponseCache } from '../../platform/http/response-cache';
import {
  AssetListSchema, KindListSchema, RelationListSchema, ScanBody, ScanResponse, WorkAnswerSchema, WorkIdParams, WorkImageParams, WorkImageQuery, WorkPageSchema, WorksQuery,
} from './catalog.model';
import type { CatalogService } from './catalog.service';
import { catalogOperation as op } from './catalog.errors';
import { libraryRoutes } from './library/library.routes';
import type { LibraryService } from './library/library.service';

/** POST /scan with its guard: the only route that needs a token. */
function scanRoutes(catalog: CatalogService, guard: BearerGuard) {
  return new Elysia().use(guard).post('/scan', ({ body }) => catalog.scan(body), {
    policy: 'resource:asset:scan',
    rateLimit: 'scan',
    body: ScanBody,
    response: { 200: ScanResponse },
    detail: { ...op('scanFile', [...GUARD_CODES, 'rate-limited', 'CATALOG_PATH_REFUSED', 'CATALOG_PATH_NOT_FOUND', 'CATALOG_WORK_NOT_FOUND', 'CATALOG_EDITION_NOT_FOUND', 'CATALOG_BINDING_CONFLICT', 'CATALOG_FILE_UNREADABLE', 'CATALOG_NO_MEDIA_ROOTS', 'MEDIA_ENGINE_BUSY', 'MEDIA_ENGINE_UNAVAILABLE', 'MEDIA_PROBE_TIMEOUT', 'BUS_NO_ANSWERER', 'BUS_TIMEOUT']),
      tags: ['scan'],
      summary: 'Scan a file under a media root',
      security: [{ bearer: [] }],
      description:
        'Probes the file through the media engine (bus query qry.media.probe), identifies it from its path, creates or ' +
        'updates its asset and MediaIndex and publishes evt.catalog.assetIndexed. A file that is not a medium is ' +
        'registered as unidentified with indexed=false and index=null. Needs a Bearer token with the policy ' +
        'resource:asset:scan; 5 requests/s per actor, burst 20. Domain codes: CATALOG_PATH_REFUSED (422), ' +
        'CATALOG_PATH_NOT_FOUND (404), CATALOG_WORK_NOT_FOUND (404), CATALOG_EDITION_NOT_FOUND (404), ' +
        'CATALOG_BINDING_CONFLICT (409), CATALOG_FILE_UNREADABLE (422), CATALOG_NO_MEDIA_ROOTS (503), MEDIA_PROBE_TIMEOUT (504, retryable), BUS_TIMEOUT (504).',
    },
  });
}

const pageConditional = conditionalGet('the page');
const NO_HEADERS: HeaderPairs = [];

/**
 * The public reads: kinds and works. The group's `detail` marks each of them tokenless in OpenAPI.
 * `pages` keeps each serialised page of /works until the next write (platform/http/response-cache.ts);
 * the response schemas stay the contract in OpenAPI and the tests rather than being checked again
 * on every answer.
 */
function readRoutes(catalog: CatalogService, pages: ResponseCache) {
  return new Elysia({ detail: { security: [] } })
    // A page already answered (so validated) for this exact path and query is served before routing.
    .onRequest(({ request }) => pages.early(request, 'public', NO_HEADERS))
    .get('/kinds', () => ({ kinds: catalog.kinds() }), {
      response: { 200: KindListSchema },
      detail: { ...op('listKinds'), tags: ['kinds'], summary: 'The kind registry: core kinds and the kinds of content-type plugins' },
    })
    .get(
      '/works',
      ({ query, request, set }) => {
        const page = query.page ?? 1;
        const pageSize = query.pageSize ?? 50;
        const filter = { q: query.q, kind: query.kind, year: query.year, genre: query.genre };
        const key = `${page}|${pageSize}|${JSON.stringify([filter.q, filter.kind, filter.year, filter.genre])}`;
        return pages.answer(request, set, 'public', key, () => catalog.listWorks(page, pageSize, filter));
      },
      {
        query: WorksQuery,
        headers: pageConditional.headers,
        response: { 200: WorkPageSchema },
        detail: { ...op('listWorks'),
          tags: ['works'],
          summary: 'List or search works, oldest first',
          description:
            'Search: `q` finds works whose title or original title has words starting with each word of `q`, in any order, ' +
            'any case, accents and ligatures folded (`amelie` finds "Le Fabuleux Destin d\'Amélie Poulain"); `kind`, `year` ' +
            'and `genre` (one genre, folded the same way) narrow the list; all combine, with the same paging and total. ' +
            'Without filters, any page costs the same as the first (a seek, not an offset walk). Answers carry a strong `ETag` and ' +
            '`Cache-Control: no-cache`; send it back in `If-None-Match` for 304 Not Modified without a body while the page is ' +
            'unchanged. A scan that adds or changes a work changes the answer on the next request.',
          responses: pageConditional.responses,
        },
      },
    )
    .get('/works/:id', async ({ params }) => ({ work: await catalog.getWork(params.id) }), {
      params: WorkIdParams,
      response: { 200: WorkAnswerSchema },
      detail: { ...op('getWork', ['CATALOG_WORK_NOT_FOUND']), tags: ['works'], summary: 'One work' },
    })
    .get('/works/:id/assets', async ({ params }) => ({ assets: await catalog.workAssets(params.id) }), {
      params: WorkIdParams,
      response: { 200: AssetListSchema },
      detail: { ...op('listWorkAssets', ['CATALOG_WORK_NOT_FOUND']),
        tags: ['works'],
        summary: 'Playable assets of a work over its editions: indexed first, then newest',
      },
    })
    .get(
      '/works/:id/images/:kind',
      async ({ params, query }) => {
        const image = await catalog.workImage(params.id, params.kind, query.width);
        return new Response(Bun.file(image.path), { headers: { 'content-type': image.type, 'cache-control': 'public, max-age=300' } });
      },
      {
        params: WorkImageParams,
        query: WorkImageQuery,
        response: { 200: t.Any({ description: 'the image bytes (image/jpeg, image/png or image/webp)' }) },
        detail: { ...op('getWorkImage', ['CATALOG_WORK_NOT_FOUND', 'CATALOG_IMAGE_NOT_FOUND', 'CATALOG_IMAGE_UNREADABLE', 'MEDIA_ENGINE_BUSY', 'MEDIA_ENGINE_UNAVAILABLE']),
          tags: ['works'],
          summary: "A work's poster or backdrop, as found with its media; `?width=` resizes it (JPEG, made once and cached)",
          description:
            'Public like GET /works, so an <img> can show it. The poster is `<name>-poster.jpg`, `poster.jpg`, `folder.jpg` or ' +
            '`cover.jpg` beside the medium, else its embedded cover; the backdrop `<name>-fanart.jpg`, `fanart.jpg` or ' +
            '`backdrop.jpg` (also .jpeg, .png, .webp). Domain codes: CATALOG_WORK_NOT_FOUND (404), CATALOG_IMAGE_NOT_FOUND ' +
            '(404), CATALOG_IMAGE_UNREADABLE (422), MEDIA_ENGINE_BUSY (503, retryable).',
        },
      },
    )
    .get('/works/:id/relations', async ({ params }) => ({ relations: await catalog.workRelations(params.id) }), {
      params: WorkIdParams,
      response: { 200: RelationListSchema },
      detail: { ...op('listWorkRelations', ['CATALOG_WORK_NOT_FOUND']),
        tags: ['works'],
        summary: "The work's lineage (its parents and its descendants) ordered by ordinal, parent before child",
      },
    });
}

/** Every catalog route; `pages` keeps the serialised pages of /works (built in index.ts). */
export function catalogRoutes(deps: { catalog: CatalogService; library: LibraryService; guard: BearerGuard; pages: ResponseCache }) {
  return new Elysia({ name: 'catalog.routes' })
    .use(readRoutes(deps.catalog, deps.pages))
    .use(scanRoutes(deps.catalog, deps.guard))
    .use(libraryRoutes(deps.library, deps.guard));
}
