/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The Usage page (#/usage): the signed-in actor's agent tokens, exec seconds and running minutes per
// UTC day over the last week (GET /api/usage, one day a request), drawn as bars and given as a table.
import { api, messageOf } from './api';
import { fill, h } from '../../../../platform/browser/dom';

interface Report {
  tokens: { total: number };
  execSeconds: number;
  runningMinutes: number;
}
const DAYS = 7;
const SERIES = [
  { key: 'tokens', label: 'Tokens', of: (r: Report) => r.tokens.total },
  { key: 'exec', label: 'Exec seconds', of: (r: Report) => r.execSeconds },
  { key: 'running', label: 'Running minutes', of: (r: Report) => r.runningMinutes },
] as const;
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** One bar chart per measure: each day's bar scaled to the week's largest. */
function chart(label: string, days: string[], values: number[]): HTMLElement {
  const w = 36 * days.length;
  const max = Math.max(...values, 1);
  const root = svg('svg', { viewBox: `0 0 ${w} 120`, role: 'img', 'aria-label': `${label} per day`, class: 'chart' });
  values.forEach((v, i) => {
    const height = Math.round((v / max) * 90);
    const bar = svg('rect', { x: i * 36 + 6, y: 100 - height, width: 24, height, class: 'bar' });
    bar.append(svg('title', {}, `${days[i]}: ${v}`));
    root.append(bar, svg('text', { x: i * 36 + 18, y: 114, 'text-anchor': 'middle', class: 'axis' }, days[i]!.slice(5)));
  });
  return h('figure', {}, root as unknown as HTMLElement, h('figcaption', {}, label));
}

export function usagePage(signal: AbortSignal): HTMLElement {
  const error = h('p', { role: 'alert', class: 'error' });
  const body = h('div', {}, h('p', {}, 'Loading…'));
  async function load() {
    const today = new Date();
    const days = Array.from({ length: DAYS }, (_, i) => new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - (DAYS - 1 - i))).toISOString().slice(0, 10));
    try {
      const reports = await Promise.all(days.map((d) => api<Report>('GET', `/api/usage?from=${d}&to=${d}`, undefined, signal)));
      const table = h('table', { class: 'usage' }, h('caption', {}, 'Usage per UTC day'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), SERIES.map((s) => h('th', { scope: 'col' }, s.label)))),
        h('tbody', {}, days.map((d, i) => h('tr', {}, h('th', { scope: 'row' }, d), SERIES.map((s) => h('td', {}, String(Math.round(s.of(reports[i]!) * 100) / 100)))))));
      fill(body, h('div', { class: 'charts' }, SERIES.map((s) => chart(s.label, days, reports.map(s.of)))), table);
    } catch (e) {
      if (!signal.aborted) error.textContent = messageOf(e);
    }
  }
  void load();
  document.title = 'Usage · Keel';
  return h('section', { class: 'page', 'aria-labelledby': 'usage-title' }, h('h1', { id: 'usage-title' }, 'Usage'),
    h('p', { class: 'note' }, 'Your agent tokens, command time and workspace running time over the last seven days (docs/agent.md#usage).'), error, body);
}
