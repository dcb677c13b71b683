// Identification from the path: content-type plugins first, then the release-name rules of the
// core (`@ctrl/video-filename-parser`): `Show.S01E03.*` -> episode, `Title (Year)` / `Title.Year.*`
// -> movie. The movie rule also looks at the parent folder (`Title (Year)/movie.mkv`).
import type { ParsedShow } from '@ctrl/video-filename-parser';
import type { KindPlugin } from './kinds';

type FilenameParse = typeof import('@ctrl/video-filename-parser').filenameParse;
let parser: FilenameParse | undefined;
/** The release-name parser (6 MB resident loaded alone) loads with the first name read, not with Keel; `require` keeps identify() synchronous. */
const filenameParse: FilenameParse = (name, isTv) =>
  (parser ??= (require('@ctrl/video-filename-parser') as typeof import('@ctrl/video-filename-parser')).filenameParse)(name, isTv);

export interface IdentifyContext {
  /** Path segments relative to the media root. */
  segments: string[];
  /** File name without its extension. */
  stem: string;
  extension: string;
}

/** A work (and edition) a file belongs to; `key` makes finding it again idempotent. */
export interface Identified {
  kind: string;
  key: string;
  title: string;
  year: number;
  editionKind: string;
  /** For an episode: its series and place in it. */
  episode?: { seriesTitle: string; seriesKey: string; season: number; episode: number };
}

export const yearOf = (s: string): number | null => {
  const m = /(?:^|[^\d])((?:19|20)\d{2})(?:[^\d]|$)/.exec(s);
  return m ? Number(m[1]) : null;
};

export const cleanTitle = (s: string) =>
  s
    .replace(/[._]+/g, ' ')
    .replace(/\s+-\s*$/, '')
    .replace(/\s+/g, ' ')
    .trim();

function editionKindOf(stem: string): string {
  const s = stem.toLowerCase().replaceAll('.', ' ');
  if (/director'?s? cut/.test(s)) return 'directors-cut';
  if (/\bextended\b/.test(s)) return 'extended';
  if (/\btheatrical\b/.test(s)) return 'theatrical';
  if (/\bunrated\b/.test(s)) return 'unrated';
  if (/\bremastered\b/.test(s)) return 'remastered';
  if (/\bimax\b/.test(s)) return 'imax';
  return 'standard';
}

function movieFrom(name: string): Identified | null {
  const parsed = filenameParse(name, false);
  const year = parsed.year ? Number(parsed.year) : null;
  const title = cleanTitle(parsed.title ?? '');
  if (!year || !title) return null;
  return { kind: 'movie', key: `movie|${title.toLowerCase()}|${year}`, title, year, editionKind: editionKindOf(name) };
}

const EPISODE_MARKER = /(^|[^a-z0-9])s\d{1,3}[ ._-]?e\d{1,4}(?![0-9])/i;
// `1x05`, which the parser does not read: the title is what comes before it.
const CROSS_MARKER = /^(.*?)[ ._-]+(\d{1,2})x(\d{2,3})(?![0-9])/i;

/** Series, season and episode from a file name; a multi-episode file (S01E01E02) counts as its first. */
function episodeFrom(stem: string): { seriesTitle: string; season: number; episode: number; year: number } | null {
  // The parser in TV mode reads a year as SxxEyy ("1999" -> S19E99): ask it only when an episode marker is there.
  if (EPISODE_MARKER.test(stem)) {
    const parsed = filenameParse(stem, true);
    const tv = 'isTv' in parsed && parsed.isTv ? (parsed as ParsedShow) : null;
    const seriesTitle = cleanTitle(tv?.title ?? '');
    if (tv && seriesTitle && tv.seasons.length === 1 && tv.episodeNumbers.length >= 1) {
      return { seriesTitle, season: tv.seasons[0]!, episode: tv.episodeNumbers[0]!, year: tv.year ? Number(tv.year) : 0 };
    }
  }
  const cross = CROSS_MARKER.exec(stem);
  const seriesTitle = cleanTitle(cross?.[1] ?? '');
  if (cross && seriesTitle) return { seriesTitle, season: Number(cross[2]), episode: Number(cross[3]), year: 0 };
  return null;
}

export function contextOf(relPath: string): IdentifyContext {
  const segments = relPath.split('/');
  const file = segments[segments.length - 1]!;
  const dot = file.lastIndexOf('.');
  return { segments, stem: dot > 0 ? file.slice(0, dot) : file, extension: dot > 0 ? file.slice(dot + 1).toLowerCase() : '' };
}

export function identify(relPath: string, plugins: KindPlugin[]): Identified | null {
  const ctx = contextOf(relPath);
  for (const p of plugins) {
    const hit = p.identify?.(ctx);
    if (hit) return hit;
  }

  const ep = episodeFrom(ctx.stem);
  if (ep) {
    const seriesKey = `series|${ep.seriesTitle.toLowerCase()}`;
    return {
      kind: 'episode',
      key: `${seriesKey}|s${ep.season}|e${ep.episode}`,
      title: `${ep.seriesTitle} S${String(ep.season).padStart(2, '0')}E${String(ep.episode).padStart(2, '0')}`,
      year: ep.year,
      editionKind: 'standard',
      episode: { seriesTitle: ep.seriesTitle, seriesKey, season: ep.season, episode: ep.episode },
    };
  }

  return movieFrom(ctx.stem) ?? (ctx.segments.length > 1 ? movieFrom(ctx.segments[ctx.segments.length - 2]!) : null);
}
