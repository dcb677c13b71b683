/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Elements from tag, attributes, handlers and children; the same small helper as the dashboard's.
type Child = Node | string | number | null | undefined | false;
type Attr = string | number | boolean | null | undefined | ((e: any) => void);

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, Attr> = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

export function fill(el: Element, ...children: (Child | Child[])[]) {
  el.replaceChildren();
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
}

export function announce(text: string) {
  const region = document.getElementById('announce');
  if (!region) return;
  region.textContent = '';
  setTimeout(() => (region.textContent = text), 50);
}

let ids = 0;
export const uid = (prefix: string) => `${prefix}-${++ids}`;

export const duration = (ms: number) => {
  const s = Math.round(ms / 1000);
  const [hh, mm, ss] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  return hh ? `${hh}:${String(mm).padStart(2, '0')}:${String(ss).padStart(2, '0')}` : `${mm}:${String(ss).padStart(2, '0')}`;
};
