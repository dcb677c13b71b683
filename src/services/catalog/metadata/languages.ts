// Languages as ISO 639-2/T (`eng`, `fra`, `deu`): what containers write (639-2/B such as `fre`,
// `ger`, or 639-1 such as `en` in a sidecar's name) mapped to one code per language.

/** ISO 639-1 -> ISO 639-2/T, for the languages media libraries carry. */
const FROM_639_1: Record<string, string> = {
  af: 'afr', am: 'amh', ar: 'ara', az: 'aze', be: 'bel', bg: 'bul', bn: 'ben', bs: 'bos', ca: 'cat', cs: 'ces', cy: 'cym',
  da: 'dan', de: 'deu', el: 'ell', en: 'eng', eo: 'epo', es: 'spa', et: 'est', eu: 'eus', fa: 'fas', fi: 'fin', fr: 'fra',
  ga: 'gle', gl: 'glg', gu: 'guj', he: 'heb', hi: 'hin', hr: 'hrv', hu: 'hun', hy: 'hye', id: 'ind', is: 'isl', it: 'ita',
  ja: 'jpn', ka: 'kat', kk: 'kaz', km: 'khm', kn: 'kan', ko: 'kor', ku: 'kur', la: 'lat', lb: 'ltz', lo: 'lao', lt: 'lit',
  lv: 'lav', mi: 'mri', mk: 'mkd', ml: 'mal', mn: 'mon', mr: 'mar', ms: 'msa', mt: 'mlt', my: 'mya', nb: 'nob', ne: 'nep',
  nl: 'nld', nn: 'nno', no: 'nor', pa: 'pan', pl: 'pol', ps: 'pus', pt: 'por', ro: 'ron', ru: 'rus', si: 'sin', sk: 'slk',
  sl: 'slv', so: 'som', sq: 'sqi', sr: 'srp', sv: 'swe', sw: 'swa', ta: 'tam', te: 'tel', th: 'tha', tl: 'tgl', tr: 'tur',
  uk: 'ukr', ur: 'urd', uz: 'uzb', vi: 'vie', yi: 'yid', zh: 'zho', zu: 'zul',
};

/** ISO 639-2/B (bibliographic) -> 639-2/T (terminology): the twenty languages where they differ. */
const B_TO_T: Record<string, string> = {
  alb: 'sqi', arm: 'hye', baq: 'eus', bur: 'mya', chi: 'zho', cze: 'ces', dut: 'nld', fre: 'fra', geo: 'kat', ger: 'deu',
  gre: 'ell', ice: 'isl', mac: 'mkd', mao: 'mri', may: 'msa', per: 'fas', rum: 'ron', slo: 'slk', tib: 'bod', wel: 'cym',
};

const T_CODES = new Set([...Object.values(FROM_639_1), 'und', 'mul', 'zxx']);

/** A language code as ISO 639-2/T; `und` when it is not one (an empty, unknown or made-up tag). */
export function iso6392(raw: string | undefined): string {
  const code = (raw ?? '').trim().toLowerCase().split(/[-_]/)[0] ?? '';
  if (code.length === 2) return FROM_639_1[code] ?? 'und';
  if (code.length !== 3 || !/^[a-z]{3}$/.test(code)) return 'und';
  return B_TO_T[code] ?? code;
}

/** A sidecar name's language part (`en`, `eng`, `fre`, `pt-BR`), or null when the part is no language. */
export function sidecarLanguage(part: string): string | null {
  const code = part.toLowerCase().split(/[-_]/)[0] ?? '';
  if (code.length === 2) return FROM_639_1[code] ?? null;
  if (code.length === 3) return B_TO_T[code] ?? (T_CODES.has(code) ? code : null);
  return null;
}
