// Serialised answers of hot reads (GET /api/workspaces, GET /works), kept per scope and query while
// the database is unchanged, with a strong ETag and 304 Not Modified on If-None-Match.
//
// What it saves: the query, building the objects, the response validation and JSON.stringify of a
// large body (together ~95 % of a 50-workspace list or a 200-work page before this existed). What
// it keeps: everything before the handler runs. Auth, the rate limit with its headers and 429, and
// query validation happen on every request, cached or not, because the cache is read inside the
// route's handler, after them.
//
// Correctness rests on two things. The scope: the caller names who the answer is for (an actor's
// id, "admin", or "public"), and it is part of the key, so another actor's request can never meet
// an entry filled for someone else. The version: `version()` is read before the answer is built
// and stored with it; an entry is served only while `version()` still returns the same value. With
// platform/db-version.ts every committed write moves it, so the read after a write is fresh.
//
// Bounded by entries and bytes; the least recently served entry goes first.
import { t } from 'elysia';

/** The content type Elysia gives an object answer, so a cached answer is byte-identical to a built one. */
const JSON_TYPE = 'application/json;charset=utf-8';

export interface ResponseCacheOptions {
  /** The data version (platform/db-version.ts): an entry is served only while it is unchanged. */
  version: () => string;
  /** Cache-Control of the answers, e.g. `private, no-cache` (per actor) or `no-cache` (public). */
  cacheControl: string;
  /** Vary of the answers (`Authorization` when the scope comes from the token). */
  vary?: string;
  maxEntries?: number;
  /** Bound on the bodies kept, in UTF-16 code units (~bytes for JSON). */
  maxChars?: number;
}

interface Entry {
  version: string;
  body: string;
  etag: string;
}

/** Elysia's `set`: the headers already decided for the request (the rate-limit headers) ride along. */
interface ElysiaSet {
  headers: Record<string, string | number>;
}

/** RFC 9110 If-None-Match: `*` or a list of entity tags, compared weakly (W/ ignored). */
export function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  const value = ifNoneMatch.trim();
  if (value === '*') return true;
  for (const part of value.split(',')) {
    const tag = part.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === etag) return true;
  }
  return false;
}

export function createResponseCache(opts: ResponseCacheOptions) {
  const maxEntries = opts.maxEntries ?? 2048;
  const maxChars = opts.maxChars ?? 32 * 1024 * 1024;
  const entries = new Map<string, Entry>();
  let chars = 0;
  let hits = 0;
  let misses = 0;

  function forget(key: string) {
    const e = entries.get(key);
    if (!e) return;
    chars -= e.body.length;
    entries.delete(key);
  }

  function store(key: string, entry: Entry) {
    forget(key);
    if (entry.body.length > maxChars) return; // larger than the whole cache: answered, not kept
    entries.set(key, entry);
    chars += entry.body.length;
    // Map order is recency order (a hit moves its entry to the end): drop from the front.
    while (entries.size > maxEntries || chars > maxChars) forget(entries.keys().next().value as string);
  }

  /**
   * The answer's headers, with those already set for the request moved into them. Moved, not
   * copied: Elysia copies any Response whose request still has headers in `set` into a new one to
   * merge them (a second Response, its body as a stream), which cost more than the rest of a hit.
   */
  function headersFor(set: ElysiaSet, etag: string): Record<string, string> {
    const h: Record<string, string> = { 'content-type': JSON_TYPE, etag, 'cache-control': opts.cacheControl };
    if (opts.vary) h.vary = opts.vary;
    for (const k in set.headers) h[k] = String(set.headers[k]);
    set.headers = {};
    return h;
  }

  return {
    /**
     * The answer of a GET: from the cache when an entry for (scope, key) was built at the current
     * version, else from `build()` (its JSON is kept). 304 with no body when If-None-Match names
     * the answer's ETag. `scope` must identify whom the answer is for; `key` the validated query.
     */
    answer(request: Request, set: ElysiaSet, scope: string, key: string, build: () => unknown): Response {
      const full = `${scope}\u0000${key}`;
      const version = opts.version(); // read before building: a write during the build makes the entry stale, never the reverse
      let entry = entries.get(full);
      if (entry && entry.version === version) {
        hits++;
        entries.delete(full);
        entries.set(full, entry);
      } else {
        misses++;
        const body = JSON.stringify(build());
        entry = { version, body, etag: `"${Bun.hash(body).toString(36)}"` };
        store(full, entry);
      }
      const headers = headersFor(set, entry.etag);
      if (etagMatches(request.headers.get('if-none-match'), entry.etag)) {
        delete headers['content-type'];
        return new Response(null, { status: 304, headers });
      }
      return new Response(entry.body, { headers });
    },
    stats: () => ({ entries: entries.size, chars, hits, misses }),
  };
}

export type ResponseCache = ReturnType<typeof createResponseCache>;

const etagHeader = { description: 'strong entity tag of the answer', schema: { type: 'string' as const } };

/** What a cached route adds to its declaration: the If-None-Match header and the 304 answer, for OpenAPI. */
export function conditionalGet(what: string) {
  return {
    headers: t.Object({
      'if-none-match': t.Optional(t.String({ maxLength: 4096, description: `ETag(s) of ${what} the client holds: 304 Not Modified while still current` })),
    }),
    responses: {
      200: { description: what, headers: { ETag: etagHeader, 'Cache-Control': { schema: { type: 'string' as const } } } },
      304: { description: `Not Modified: ${what} is unchanged since the ETag sent in If-None-Match (no body)`, headers: { ETag: etagHeader } },
    },
  };
}
