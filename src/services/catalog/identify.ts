// Identification from the path: content-type plugins first, then the release-name rules of the
// core (`@ctrl/video-filename-parser`): `Show.S01E03.*` -> episode, `Title (Year)` / `Title.Year.*`
// -> movie. The movie rule also looks at the parent folder (`Title (Year)/movie.mkv`).
import { filenameParse, type ParsedShow } from '@ctrl/video-filename-parser';
import type { KindPlugin } from './kinds';

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

  // The parser in TV mode reads a year as SxxEyy ("1999" -> S19E99): ask it only when an episode marker is there.
  const parsed = EPISODE_MARKER.test(ctx.stem) ? filenameParse(ctx.stem, true) : null;
  const tv = parsed && 'isTv' in parsed && parsed.isTv ? (parsed as ParsedShow) : null;
  if (tv && tv.seasons.length === 1 && tv.episodeNumbers.length >= 1) {
    const seriesTitle = cleanTitle(tv.title ?? '');
    if (seriesTitle) {
      const season = tv.seasons[0]!;
      const episode = tv.episodeNumbers[0]!;
      const seriesKey = `series|${seriesTitle.toLowerCase()}`;
      return {
        kind: 'episode',
        key: `${seriesKey}|s${season}|e${episode}`,
        title: `${seriesTitle} S${String(season).padStart(2, '0')}E${String(episode).padStart(2, '0')}`,
        year: tv.year ? Number(tv.year) : 0,
        editionKind: 'standard',
        episode: { seriesTitle, seriesKey, season, episode },
      };
    }
  }

  return movieFrom(ctx.stem) ?? (ctx.segments.length > 1 ? movieFrom(ctx.segments[ctx.segments.length - 2]!) : null);
}
