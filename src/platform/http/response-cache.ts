// Serialised answers of hot reads (GET /api/workspaces, GET /works), kept per scope and query while
// the database is unchanged, with a strong ETag and 304 Not Modified on If-None-Match.
//
// What it saves: the query, building the objects, the response validation and JSON.stringify of a
// large body (together ~95 % of a 50-workspace list or a 200-work page before this existed). Two
// ways in:
//  - `answer()`, inside the route's handler, after Elysia routed the request and validated its
//    query and headers: it serves or builds the answer for (scope, validated query).
//  - `early()`, from an onRequest hook, before Elysia's routing, query parsing and validation: it
//    serves only a request whose raw path and query string (byte for byte) an earlier `answer()`
//    saw pass validation for the same scope, so it returns exactly what the handler would. Any
//    other string (an unknown one, or another spelling of a known query) goes the normal way, and
//    an invalid query still meets its 400/422. Auth, the rate limit with its headers and 429 run
//    in the hook before `early()` (platform/http/workspace-auth.ts), so on every request.
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

/** Longest If-None-Match a cached route accepts (its header schema, below); `early()` leaves longer ones to it. */
const MAX_IF_NONE_MATCH = 4096;

/**
 * Longest path and query `early()` remembers. Real clients' targets are short; a longer one (say a
 * query padded with parameters the schema strips) is answered the normal way, so the memory the
 * remembered targets take stays bounded: at most maxEntries * 4 of them, each this long or less.
 */
const MAX_TARGET_CHARS = 512;

/** Headers decided before the answer (the rate-limit headers), as name/value pairs. */
export type HeaderPairs = readonly (readonly [string, string])[];

/** The raw path and query of a request, as sent: `/works?page=2&pageSize=200`. */
function rawTarget(url: string): string {
  return url.slice(url.indexOf('/', url.indexOf('//') + 2));
}

export interface ResponseCacheOptions {
  /**
   * The data version (Store.version(), platform/store/store.ts): an entry is served only while it is
   * unchanged. Synchronous on SQLite, so a hit costs no await there; a round trip on PostgreSQL.
   */
  version: () => string | Promise<string>;
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
  // (scope, raw path and query) -> the key `answer()` built for it after validation. Only keys,
  // never bodies: bounded by count (oldest first), and a target whose entry went is just a miss.
  const validated = new Map<string, string>();
  const maxTargets = maxEntries * 4;
  let chars = 0;
  let hits = 0;
  let misses = 0;
  let earlyHits = 0;

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
  function remember(target: string, full: string) {
    if (target.length > MAX_TARGET_CHARS || validated.get(target) === full) return;
    validated.delete(target);
    validated.set(target, full);
    if (validated.size > maxTargets) validated.delete(validated.keys().next().value as string);
  }

  /** The current entry of `full`, moved to the recent end; undefined when missing or built at another version. */
  function current(full: string, version: string): Entry | undefined {
    const entry = entries.get(full);
    if (!entry || entry.version !== version) return undefined;
    entries.delete(full);
    entries.set(full, entry);
    return entry;
  }

  function respond(request: Request, entry: Entry, headers: Record<string, string>): Response {
    if (etagMatches(request.headers.get('if-none-match'), entry.etag)) {
      delete headers['content-type'];
      return new Response(null, { status: 304, headers });
    }
    return new Response(entry.body, { headers });
  }

  function baseHeaders(etag: string): Record<string, string> {
    const h: Record<string, string> = { 'content-type': JSON_TYPE, etag, 'cache-control': opts.cacheControl };
    if (opts.vary) h.vary = opts.vary;
    return h;
  }

  function headersFor(set: ElysiaSet, etag: string): Record<string, string> {
    const h = baseHeaders(etag);
    for (const k in set.headers) h[k] = String(set.headers[k]);
    set.headers = {};
    return h;
  }

  return {
    /**
     * The answer of a GET: from the cache when an entry for (scope, key) was built at the current
     * version, else from `build()` (its JSON is kept). 304 with no body when If-None-Match names
     * the answer's ETag. `scope` must identify whom the answer is for; `key` the validated query.
     * The answer must depend on nothing else of the request (no host, no other header): `early()`
     * serves it again by scope, path and query alone.
     */
    answer(request: Request, set: ElysiaSet, scope: string, key: string, build: () => unknown): Response | Promise<Response> {
      const full = `${scope}\u0000${key}`;
      const finish = (entry: Entry) => {
        // This raw target passed the route's validation and means `key`: early() may answer it now.
        remember(`${scope}\u0000${rawTarget(request.url)}`, full);
        return respond(request, entry, headersFor(set, entry.etag));
      };
      const withVersion = (version: string) => {
        const entry = current(full, version);
        if (entry) {
          hits++;
          return finish(entry);
        }
        misses++;
        const keep = (value: unknown) => {
          const body = JSON.stringify(value);
          const built = { version, body, etag: `"${Bun.hash(body).toString(36)}"` };
          store(full, built);
          return finish(built);
        };
        const value = build();
        return value instanceof Promise ? value.then(keep) : keep(value);
      };
      const version = opts.version(); // read before building: a write during the build makes the entry stale, never the reverse
      return typeof version === 'string' ? withVersion(version) : version.then(withVersion);
    },
    /**
     * The answer of a GET from an onRequest hook, before routing and validation, or undefined to
     * let the request take the normal way. Served only when `answer()` already validated this very
     * path and query for this scope and its entry is current. `headers` (the rate-limit headers)
     * are added to the answer. Call it only after everything the request must pass (auth, the
     * rate limit), with the scope the route's handler would use.
     */
    early(request: Request, scope: string, headers: HeaderPairs): Response | undefined | Promise<Response | undefined> {
      if (request.method !== 'GET') return undefined;
      const full = validated.get(`${scope}\u0000${rawTarget(request.url)}`);
      if (full === undefined) return undefined;
      const inm = request.headers.get('if-none-match');
      if (inm !== null && inm.length > MAX_IF_NONE_MATCH) return undefined; // the route's header validation answers it
      const withVersion = (version: string) => {
        const entry = current(full, version);
        if (!entry) return undefined;
        earlyHits++;
        const h = baseHeaders(entry.etag);
        for (const [k, v] of headers) h[k] = v;
        return respond(request, entry, h);
      };
      const version = opts.version();
      return typeof version === 'string' ? withVersion(version) : version.then(withVersion);
    },
    stats: () => ({ entries: entries.size, chars, hits, misses, earlyHits, targets: validated.size }),
  };
}

export type ResponseCache = ReturnType<typeof createResponseCache>;

const etagHeader = { description: 'strong entity tag of the answer', schema: { type: 'string' as const } };

/** What a cached route adds to its declaration: the If-None-Match header and the 304 answer, for OpenAPI. */
export function conditionalGet(what: string) {
  return {
    headers: t.Object({
      'if-none-match': t.Optional(t.String({ maxLength: MAX_IF_NONE_MATCH, description: `ETag(s) of ${what} the client holds: 304 Not Modified while still current` })),
    }),
    responses: {
      200: { description: what, headers: { ETag: etagHeader, 'Cache-Control': { schema: { type: 'string' as const } } } },
      304: { description: `Not Modified: ${what} is unchanged since the ETag sent in If-None-Match (no body)`, headers: { ETag: etagHeader } },
    },
  };
}
