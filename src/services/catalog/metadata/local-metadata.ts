// Local metadata read with a medium, no internet: the Kodi/Jellyfin .nfo beside it (`<name>.nfo`,
// else `movie.nfo`; `tvshow.nfo` for its series), the artwork beside it (`<name>-poster.jpg`,
// `poster.jpg`, `folder.jpg`, `cover.jpg`; `<name>-fanart.jpg`, `fanart.jpg`, `backdrop.jpg`), and the
// file's own tags and embedded cover. These files are never assets of their own (the crawl skips
// them and POST /scan refuses them): they belong to the medium beside them.
import { openSync, readSync, closeSync, fstatSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { MediaTags } from '../../../platform/bus/media-shapes';
import { sidecarLanguage } from './languages';
import { parseNfo, NFO_MAX_BYTES, type NfoMetadata } from './nfo';

/** Where an image of a work is: a file under a media root, or an attached picture inside a medium. */
export interface ImageRef {
  root: number;
  /** Relative to the root's real path. */
  path: string;
  /** For an embedded cover: the stream index of the attached picture in the medium at `path`. */
  stream?: number;
}


export interface LocalMetadata {
  title?: string;
  originalTitle?: string;
  overview?: string;
  year?: number;
  genres?: string[];
  poster: ImageRef | null;
  backdrop: ImageRef | null;
}

/** Extensions of files read with a medium: never scanned as assets of their own. */
export const SIDECAR_EXTENSIONS = new Set(['nfo', 'jpg', 'jpeg', 'png', 'webp', 'tbn', 'srt', 'vtt', 'ass', 'ssa', 'sub', 'idx']);
const IMAGE_EXTENSIONS = ['jpg', 'jpeg', 'png', 'webp'];

/** Reads at most NFO_MAX_BYTES of a regular file; null when absent, unreadable or too large. */
function readSmall(abs: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(abs, 'r');
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > NFO_MAX_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, st.size, 0);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Folder listings already read during one scan step, by absolute path: each folder is read once. */
export type FolderCache = Map<string, Map<string, string>>;

/** File names of a folder, lower-cased to their real names; empty when unreadable. */
function listing(absDir: string, cache?: FolderCache): Map<string, string> {
  const known = cache?.get(absDir);
  if (known) return known;
  const names = new Map<string, string>();
  cache?.set(absDir, names);
  try {
    for (const d of readdirSync(absDir, { withFileTypes: true })) if (d.isFile()) names.set(d.name.toLowerCase(), d.name);
  } catch {
    // an unreadable folder has no sidecars
  }
  return names;
}

function firstOf(names: Map<string, string>, stems: string[]): string | undefined {
  for (const stem of stems) {
    for (const ext of IMAGE_EXTENSIONS) {
      const real = names.get(`${stem}.${ext}`.toLowerCase());
      if (real) return real;
    }
  }
  return undefined;
}

function nfoIn(absDir: string, names: Map<string, string>, candidates: string[]): NfoMetadata | null {
  for (const c of candidates) {
    const real = names.get(c.toLowerCase());
    if (!real) continue;
    const text = readSmall(join(absDir, real));
    const parsed = text === null ? null : parseNfo(text);
    if (parsed) return parsed;
  }
  return null;
}

const join2 = (dir: string, name: string) => (dir === '.' || dir === '' ? name : `${dir}/${name}`);

/**
 * The local metadata of the medium at `relPath` on a root whose real path is `realRoot`: for its
 * own work, and (for an episode) for its series. Tags fill what the .nfo leaves out.
 */
export function readLocalMetadata(
  realRoot: string,
  root: number,
  relPath: string,
  opts: { episode: boolean; tags?: MediaTags; folders?: FolderCache },
): { work: LocalMetadata; series: LocalMetadata | null } {
  const relDir = dirname(relPath);
  const absDir = relDir === '.' ? realRoot : join(realRoot, relDir);
  const file = relPath.slice(relPath.lastIndexOf('/') + 1);
  const stem = file.includes('.') ? file.slice(0, file.lastIndexOf('.')) : file;
  const names = listing(absDir, opts.folders);
  const tags = opts.tags ?? {};

  const nfo = nfoIn(absDir, names, opts.episode ? [`${stem}.nfo`] : [`${stem}.nfo`, 'movie.nfo']);
  const own = (stems: string[]) => {
    const found = firstOf(names, stems);
    return found ? { root, path: join2(relDir, found) } : null;
  };
  const cover = tags.coverStream !== undefined ? { root, path: relPath, stream: tags.coverStream } : null;
  // An episode's folder artwork is its series' (or season's); only its own named artwork is the episode's.
  const posterStems = opts.episode ? [`${stem}-poster`, `${stem}-thumb`] : [`${stem}-poster`, 'poster', 'folder', 'cover'];
  const backdropStems = opts.episode ? [`${stem}-fanart`] : [`${stem}-fanart`, 'fanart', 'backdrop'];
  const work: LocalMetadata = {
    title: nfo?.title ?? tags.title,
    originalTitle: nfo?.originalTitle,
    overview: nfo?.overview ?? tags.overview,
    year: nfo?.year ?? tags.year,
    genres: nfo?.genres.length ? nfo.genres : tags.genres,
    poster: own(posterStems) ?? cover,
    backdrop: own(backdropStems),
  };
  if (!opts.episode) return { work, series: null };

  // The series folder: the one holding tvshow.nfo, the episode's own or its parent (Show/Season 1/x.mkv).
  let series: LocalMetadata | null = null;
  for (const dir of relDir === '.' ? ['.'] : [relDir, dirname(relDir)]) {
    const abs = dir === '.' ? realRoot : join(realRoot, dir);
    const there = dir === relDir ? names : listing(abs, opts.folders);
    const show = nfoIn(abs, there, ['tvshow.nfo']);
    const poster = firstOf(there, ['poster', 'folder', 'cover']);
    const backdrop = firstOf(there, ['fanart', 'backdrop']);
    if (!show && !poster && !backdrop) continue;
    series = {
      title: show?.title,
      originalTitle: show?.originalTitle,
      overview: show?.overview,
      year: show?.year,
      genres: show?.genres.length ? show.genres : undefined,
      poster: poster ? { root, path: join2(dir, poster) } : null,
      backdrop: backdrop ? { root, path: join2(dir, backdrop) } : null,
    };
    break;
  }
  return { work, series };
}

const tagYear = (s: string | undefined) => {
  const m = s ? /(?:^|\D)(1[89]\d\d|20\d\d)(?:\D|$)/.exec(s) : null;
  return m ? Number(m[1]) : undefined;
};

/** The tags Keel reads from ffprobe's format tags and streams (keys compared without case). */
export function mediaTagsOf(formatTags: Record<string, string> | undefined, streams: { index: number; codec_type?: string; disposition?: Record<string, number> }[]): MediaTags {
  const tags = new Map(Object.entries(formatTags ?? {}).map(([k, v]) => [k.toLowerCase(), String(v).trim()]));
  const text = (...keys: string[]) => keys.map((k) => tags.get(k)).find((v) => v !== undefined && v !== '');
  const genre = text('genre');
  const out: MediaTags = {};
  const title = text('title');
  if (title) out.title = title.slice(0, 500);
  const year = tagYear(text('date', 'year', 'date_released'));
  if (year) out.year = year;
  if (genre) out.genres = genre.split(/\s*[/;,]\s*/).filter(Boolean).slice(0, 32).map((g) => g.slice(0, 100));
  const overview = text('synopsis', 'description', 'comment', 'summary');
  if (overview) out.overview = overview.slice(0, 20_000);
  const cover = streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic === 1);
  if (cover) out.coverStream = cover.index;
  return out;
}

/** A subtitle file beside a medium (`<name>.srt`, `<name>.<lang>.srt`, `.vtt`, `.ass`, `.ssa`). */
export interface SidecarSubtitle {
  language: string;
  format: 'srt' | 'vtt' | 'ass';
  /** Relative to the root's real path. */
  path: string;
}

const SUBTITLE_FORMATS: Record<string, SidecarSubtitle['format']> = { srt: 'srt', vtt: 'vtt', ass: 'ass', ssa: 'ass' };

/** The subtitle files that belong to the medium at `relPath`, by name; sorted so the list is stable. */
export function findSidecarSubtitles(realRoot: string, relPath: string, folders?: FolderCache): SidecarSubtitle[] {
  const relDir = dirname(relPath);
  const file = relPath.slice(relPath.lastIndexOf('/') + 1);
  const stem = (file.includes('.') ? file.slice(0, file.lastIndexOf('.')) : file).toLowerCase();
  const out: SidecarSubtitle[] = [];
  for (const [lower, real] of listing(relDir === '.' ? realRoot : join(realRoot, relDir), folders)) {
    const dot = lower.lastIndexOf('.');
    const format = SUBTITLE_FORMATS[lower.slice(dot + 1)];
    if (!format || !lower.startsWith(stem + '.')) continue;
    const middle = lower.slice(stem.length + 1, dot);
    // `<name>.srt`, or `<name>.<tags>.srt` whose tags hold a language (`.en`, `.fre.forced`, `.pt-BR`).
    const language = middle === '' ? 'und' : middle.split('.').map(sidecarLanguage).find((l) => l !== null) ?? 'und';
    if (middle !== '' && language === 'und' && !middle.split('.').every((t) => ['forced', 'sdh', 'cc', 'hi', 'default'].includes(t))) continue;
    out.push({ language, format, path: join2(relDir, real) });
    if (out.length >= 64) break;
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

const FOLDER_SIDECARS = /^(movie\.nfo|tvshow\.nfo|(poster|folder|cover|fanart|backdrop)\.(jpe?g|png|webp))$/;

/**
 * What a rescan compares to tell whether a medium's sidecars changed while the medium did not: the
 * names, sizes and mtimes of the files read with it in its folder (its own `<name>.*` and
 * `<name>-*`, and the folder's .nfo and artwork). '' when the folder cannot be read.
 */
export function localSignature(realRoot: string, relPath: string, folders?: FolderCache): string {
  const relDir = dirname(relPath);
  const absDir = relDir === '.' ? realRoot : join(realRoot, relDir);
  const names = listing(absDir, folders);
  const file = relPath.slice(relPath.lastIndexOf('/') + 1).toLowerCase();
  const stem = file.includes('.') ? file.slice(0, file.lastIndexOf('.')) : file;
  const parts: string[] = [];
  for (const [lower, real] of names) {
    if (lower === file) continue;
    if (!(lower.startsWith(stem + '.') || lower.startsWith(stem + '-') || FOLDER_SIDECARS.test(lower))) continue;
    const ext = lower.slice(lower.lastIndexOf('.') + 1);
    if (!SIDECAR_EXTENSIONS.has(ext)) continue;
    try {
      const st = statSync(join(absDir, real));
      parts.push(`${real}|${st.size}|${Math.trunc(st.mtimeMs)}`);
    } catch {
      // gone since the listing
    }
  }
  return parts.sort().join('\n');
}
