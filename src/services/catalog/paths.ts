// Media-root confinement: a scan path is relative to one configured root and must stay inside
// its real path. Refusals never repeat the received path.
import { realpathSync, statSync } from 'node:fs';
import { join, relative, sep, isAbsolute } from 'node:path';
import { CatalogErrors } from './catalog.errors';
import { isInside } from '../../platform/paths';

// Statuses, retryable and category are in catalog.errors.ts: a missing file or root is recoverable by
// the operator, not by retrying the same request.
export const pathRefused = (why: string) => CatalogErrors.CATALOG_PATH_REFUSED(`The scan path is refused: ${why}`);
export const pathNotFound = () => CatalogErrors.CATALOG_PATH_NOT_FOUND('No file exists at the scan path under the media roots');
export const fileUnreadable = () => CatalogErrors.CATALOG_FILE_UNREADABLE('The file at the scan path cannot be read by the catalog');
export const noMediaRoots = () => CatalogErrors.CATALOG_NO_MEDIA_ROOTS('No media root is configured (APP_MEDIA_ROOTS)');

const ENCODED_TRICK = /%(2e|2f|5c|00)/i;

/**
 * Lexical checks of a relative path: no absolute path, NUL, backslash, empty or dot segments,
 * and no percent-encoded dot, slash, backslash or NUL (we never decode, but a client that sent
 * one meant something else than the literal name). Returns the normalized segments joined by '/'.
 */
export function checkRelativePath(raw: string): string {
  if (raw.length === 0) throw pathRefused('it is empty');
  if (raw.length > 4096) throw pathRefused('it is too long');
  if (raw.includes('\0')) throw pathRefused('it contains a NUL character');
  if (raw.includes('\\')) throw pathRefused('it contains a backslash');
  if (raw.startsWith('/') || isAbsolute(raw) || /^[a-z]:/i.test(raw)) throw pathRefused('it must be relative to a media root');
  if (ENCODED_TRICK.test(raw)) throw pathRefused('it contains a percent-encoded separator, dot or NUL');
  const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..')) throw pathRefused('it leaves its media root');
  if (segments.length === 0) throw pathRefused('it names no file');
  return segments.join('/');
}

export interface ResolvedPath {
  root: number;
  /** Path relative to the root's real path, after symlinks: the asset key. */
  relPath: string;
  absPath: string;
}

/**
 * Resolves a checked relative path on root `root` (its index in `roots`). The real path, symlinks
 * followed, must stay inside the root's real path and be a regular file. Returns null when absent.
 */
export function resolveOnRoot(roots: string[], root: number, rel: string): ResolvedPath | null {
  const base = roots[root];
  if (base === undefined) return null;
  let realRoot: string;
  let real: string;
  try {
    realRoot = realpathSync(base);
    real = realpathSync(join(realRoot, rel));
  } catch {
    return null;
  }
  if (!isInside(realRoot, real) || real === realRoot) throw pathRefused('it leaves its media root');
  let isFile = false;
  try {
    isFile = statSync(real).isFile();
  } catch {
    return null;
  }
  if (!isFile) throw pathRefused('it does not name a regular file');
  return { root, relPath: relative(realRoot, real).split(sep).join('/'), absPath: real };
}

/** The root to scan on: the one asked for, else the first root where the file exists. */
export function locate(roots: string[], raw: string, root?: number): ResolvedPath {
  if (roots.length === 0) throw noMediaRoots();
  const rel = checkRelativePath(raw);
  if (root !== undefined) {
    if (root >= roots.length) throw pathRefused('the root index is not configured');
    const r = resolveOnRoot(roots, root, rel);
    if (!r) throw pathNotFound();
    return r;
  }
  for (let i = 0; i < roots.length; i++) {
    const r = resolveOnRoot(roots, i, rel);
    if (r) return r;
  }
  throw pathNotFound();
}
