// Search text folded in code at write time, so both databases match the same way: lower case,
// accents and ligatures folded, anything not a letter or digit a word break. A query matches a work
// when each of its words starts a word of the title or original title, in any order.

const LIGATURES: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i' };

/** The words of `s`, folded. */
export function foldWords(s: string): string[] {
  return s
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[ßæœøłđðþı]/g, (c) => LIGATURES[c] ?? c)
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** The search column of a work: its folded words with a space before each, so `LIKE '% word%'` is a word prefix. */
export const searchTextOf = (title: string, originalTitle: string) => ` ${[...new Set([...foldWords(title), ...foldWords(originalTitle)])].join(' ')} `;

/** The genre column: `|drama|science fiction|`, each genre folded, for an exact `LIKE '%|genre|%'`. */
export const genreKeyOf = (genres: string[]) => (genres.length ? `|${genres.map((g) => foldWords(g).join(' ')).join('|')}|` : '');

/** The folded words of a query, at most 8 of them (each one more LIKE). */
export const queryWords = (q: string) => [...new Set(foldWords(q))].slice(0, 8);
