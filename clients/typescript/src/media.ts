// The media side of @keel/sdk: the catalog (scan a file, works and their assets), library scans
// (start, then wait), playback sessions (a URL a player opens without headers). Authorised by an
// access token, or by an identity API key that the SDK exchanges for one (POST /sessions on the
// identity service) and renews before it expires (POST /sessions/refresh).
import { KeelError } from './errors.js';
import type { components as CatalogComponents, operations as CatalogOperations } from './generated/catalog.js';
import type { components as PlaybackComponents } from './generated/playback.js';
import type { components as IdentityComponents } from './generated/identity.js';

type CatalogSchemas = CatalogComponents['schemas'];
export type ScanBody = CatalogSchemas['ScanBody'];
export type LibraryScanView = CatalogSchemas['LibraryScan'];
export type Work = CatalogSchemas['Work'];
/** What POST /scan answers: the asset, its index, whether it was indexed. */
export type ScanResult = CatalogOperations['scanFile']['responses'][200]['content']['application/json'];
export type PlaybackSession = PlaybackComponents['schemas']['PlaybackSession'];
type TokenPair = IdentityComponents['schemas']['TokenPair'];

export interface MediaOptions {
  /** The catalog's base URL; default KEEL_CATALOG_URL, else the workspace URL's host on port 3101. */
  catalog?: string;
  /** The playback service's; default KEEL_PLAYBACK_URL, else port 3106. */
  playback?: string;
  /** The identity service's (to exchange an API key); default KEEL_IDENTITY_URL, else port 3104. */
  identity?: string;
  /** An identity API key (`keel_ak_...`); default KEEL_API_KEY. Exchanged for access tokens as needed. */
  apiKey?: string;
  /** An access token to use as is (instead of an API key). */
  token?: string;
}

const env = (name: string): string | undefined => (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function onPort(base: string, port: number): string {
  const u = new URL(base);
  u.port = String(port);
  return u.origin;
}

/** Calls to one media service with the current access token; errors (problem+json) as KeelError. */
class MediaHttp {
  constructor(
    readonly url: string,
    private readonly auth: () => Promise<string | undefined>,
    private readonly fetchFn: typeof fetch,
  ) {}
  async json<T>(method: string, path: string, body?: unknown, query: Record<string, string | number | undefined> = {}): Promise<T> {
    const u = new URL(this.url.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    const headers: Record<string, string> = {};
    const token = await this.auth();
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.fetchFn(u, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
    } catch (err) {
      throw new KeelError(0, 'NETWORK_ERROR', `could not reach ${this.url}: ${(err as Error).message}`);
    }
    if (!res.ok) throw await KeelError.fromResponse(res);
    return (await res.json()) as T;
  }
}

export class Media {
  readonly catalog: Catalog;
  readonly library: Library;
  readonly playback: Playback;
  #pair: { access: string; refresh: string; until: number } | undefined;
  #pending: Promise<string> | undefined;

  constructor(workspaceUrl: string, opts: MediaOptions = {}, fetchFn: typeof fetch = ((...a: Parameters<typeof fetch>) => fetch(...a)) as typeof fetch) {
    const base = workspaceUrl;
    const catalogUrl = opts.catalog ?? env('KEEL_CATALOG_URL') ?? onPort(base, 3101);
    const playbackUrl = opts.playback ?? env('KEEL_PLAYBACK_URL') ?? onPort(base, 3106);
    const identityUrl = opts.identity ?? env('KEEL_IDENTITY_URL') ?? onPort(base, 3104);
    const apiKey = opts.apiKey ?? env('KEEL_API_KEY');
    const identity = new MediaHttp(identityUrl, async () => undefined, fetchFn);
    const auth = async (): Promise<string | undefined> => {
      if (opts.token) return opts.token;
      if (!apiKey) return undefined;
      if (this.#pair && Date.now() < this.#pair.until) return this.#pair.access;
      return (this.#pending ??= (async () => {
        try {
          let pair: TokenPair | undefined;
          if (this.#pair) pair = await identity.json<TokenPair>('POST', '/sessions/refresh', { refreshToken: this.#pair.refresh }).catch(() => undefined);
          pair ??= await identity.json<TokenPair>('POST', '/sessions', { apiKey });
          // Renewed 30 s (or a tenth of its life) before it expires.
          this.#pair = { access: pair.accessToken, refresh: pair.refreshToken, until: Date.now() + pair.expiresIn * 1000 - Math.min(30_000, pair.expiresIn * 100) };
          return pair.accessToken;
        } finally {
          this.#pending = undefined;
        }
      })());
    };
    const catalog = new MediaHttp(catalogUrl, auth, fetchFn);
    this.catalog = new Catalog(catalog);
    this.library = new Library(catalog);
    this.playback = new Playback(new MediaHttp(playbackUrl, auth, fetchFn));
  }
}

export class Catalog {
  constructor(private readonly http: MediaHttp) {}
  /** Scans one file (a path relative to a media root) and answers its asset and index. */
  scan(body: ScanBody): Promise<ScanResult> {
    return this.http.json('POST', '/scan', body);
  }
  works(query: { page?: number; pageSize?: number } = {}): Promise<{ total: number; works: Work[] }> {
    return this.http.json('GET', '/works', undefined, query);
  }
  async work(id: string): Promise<Work> {
    return (await this.http.json<{ work: Work }>('GET', `/works/${encodeURIComponent(id)}`)).work;
  }
  async assets(workId: string): Promise<Record<string, any>[]> {
    return (await this.http.json<{ assets: Record<string, any>[] }>('GET', `/works/${encodeURIComponent(workId)}/assets`)).assets;
  }
  async kinds(): Promise<unknown[]> {
    return (await this.http.json<{ kinds: unknown[] }>('GET', '/kinds')).kinds;
  }
}

/** A library scan: its view when started, and `wait()` for its end. */
export interface LibraryScan extends LibraryScanView {
  /** Polls until `done` (resolves with the view) or `failed` (throws KeelError LIBRARY_SCAN_FAILED). */
  wait(opts?: { timeoutMs?: number }): Promise<LibraryScanView>;
}

export class Library {
  constructor(private readonly http: MediaHttp) {}
  /** Starts a scan of every media root (`{}`) or of one folder (`{path, root?}`). */
  async scan(body: { path?: string; root?: string | number } = {}): Promise<LibraryScan> {
    const started = await this.http.json<LibraryScanView>('POST', '/library/scans', body);
    const wait = async (opts: { timeoutMs?: number } = {}) => {
      const until = Date.now() + (opts.timeoutMs ?? 600_000);
      for (let delay = 100; ; delay = Math.min(delay * 1.5, 2000)) {
        const view = await this.get(started.id);
        if (view.status === 'done') return view;
        if (view.status === 'failed') throw new KeelError(0, 'LIBRARY_SCAN_FAILED', String((view as { error?: unknown }).error ?? 'the scan failed'), { scan: view });
        if (Date.now() > until) throw new KeelError(0, 'TIMEOUT', `scan ${started.id} is ${view.status} after ${opts.timeoutMs ?? 600_000} ms`, { scan: view });
        await sleep(delay);
      }
    };
    return { ...started, wait };
  }
  get(id: string): Promise<LibraryScanView> {
    return this.http.json('GET', `/library/scans/${encodeURIComponent(id)}`);
  }
}

export class Playback {
  constructor(private readonly http: MediaHttp) {}
  /** A playback session of an asset: its `url` plays without headers until `expiresAt`. */
  async session(assetId: string, mode: 'hls' | 'direct' = 'hls'): Promise<PlaybackSession> {
    return (await this.http.json<{ session: PlaybackSession }>('POST', '/sessions', { assetId, mode })).session;
  }
  /** Ends a session at once (its URL answers 410 from then on). */
  end(id: string): Promise<unknown> {
    return this.http.json('DELETE', `/sessions/${encodeURIComponent(id)}`);
  }
}
