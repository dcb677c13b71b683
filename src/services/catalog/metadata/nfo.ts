// Kodi/Jellyfin .nfo files: the XML a library already holds beside its media. Read safely: a bounded
// size, no DTD (a file declaring one is refused whole, so no entity is ever defined, let alone
// expanded), only the five predefined entities and numeric character references decoded, and only
// the root element's direct children read. Anything else (a bare URL, broken XML) is no metadata.

/** Larger than any real .nfo (Kodi writes a few KB; with cast lists tens of KB). */
export const NFO_MAX_BYTES = 256 * 1024;

/** Root elements of the .nfo kinds Keel reads. */
const ROOTS = new Set(['movie', 'tvshow', 'episodedetails', 'musicvideo']);

export interface NfoMetadata {
  root: string;
  title?: string;
  originalTitle?: string;
  overview?: string;
  year?: number;
  genres: string[];
}

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes the predefined entities and character references; any other `&name;` stays as it is. */
export function decodeText(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,4});/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : '';
    }
    return PREDEFINED[ref] ?? whole;
  });
}

/** The direct children of the root element as [name, text] pairs, or null when this is not an .nfo we read. */
function children(xml: string): { root: string; fields: [string, string][] } | null {
  // A DTD is where entities are declared: refuse it rather than interpret it.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) return null;
  const tag = /<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[^<>]*?)?)(\/?)>|<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>/g;
  const stack: string[] = [];
  let root: string | null = null;
  const fields: [string, string][] = [];
  let text = '';
  let m: RegExpExecArray | null;
  let last = 0;
  while ((m = tag.exec(xml))) {
    if (stack.length === 2) text += decodeText(xml.slice(last, m.index));
    last = tag.lastIndex;
    if (m[5] !== undefined) {
      if (stack.length === 2) text += m[5];
      continue;
    }
    if (m[2] === undefined) continue; // comment or processing instruction
    const name = m[2].toLowerCase();
    if (m[1]) {
      if (stack.pop() !== name) return null; // mismatched: not well-formed
      if (stack.length === 1) fields.push([name, text.trim()]);
      if (stack.length === 0) return root ? { root, fields } : null;
      continue;
    }
    if (stack.length === 0) {
      if (root !== null || !ROOTS.has(name)) return null;
      root = name;
    }
    if (m[4]) continue; // <empty/>
    if (stack.length === 1) text = '';
    stack.push(name);
    if (stack.length > 32) return null;
  }
  return null;
}

const yearIn = (s: string | undefined): number | undefined => {
  const m = s ? /(?:^|\D)(1[89]\d\d|20\d\d)(?:\D|$)/.exec(s) : null;
  return m ? Number(m[1]) : undefined;
};

/** Parses an .nfo's text; null when it is not one of the XML kinds Keel reads. */
export function parseNfo(xml: string): NfoMetadata | null {
  if (xml.length > NFO_MAX_BYTES) return null;
  const parsed = children(xml.replace(/^\uFEFF/, ''));
  if (!parsed) return null;
  const first = (name: string) => parsed.fields.find(([n, v]) => n === name && v !== '')?.[1];
  const genres: string[] = [];
  for (const [n, v] of parsed.fields) {
    if (n !== 'genre') continue;
    for (const g of v.split(/\s*\/\s*/)) if (g && !genres.includes(g) && genres.length < 32) genres.push(g.slice(0, 100));
  }
  const cap = (s: string | undefined, n: number) => (s === undefined ? undefined : s.slice(0, n));
  return {
    root: parsed.root,
    title: cap(first('title'), 500),
    originalTitle: cap(first('originaltitle'), 500),
    overview: cap(first('plot') ?? first('outline'), 20_000),
    year: yearIn(first('year')) ?? yearIn(first('premiered')) ?? yearIn(first('aired')),
    genres,
  };
}
