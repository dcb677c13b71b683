/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// The one DOM helper of Keel's browser apps (the dashboard, the media web app): elements from tag,
// attributes, handlers and children. No framework: the pages are lists, forms and a few panels, and
// each app's script stays a few kB.

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
  append(el, children);
  return el;
}

export function append(el: Element, children: (Child | Child[])[]) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
}

/** Replaces an element's children. */
export function fill(el: Element, ...children: (Child | Child[])[]) {
  el.replaceChildren();
  append(el, children);
}

/** Tells screen readers what just happened (a polite live region). */
export function announce(text: string) {
  const region = document.getElementById('announce');
  if (!region) return;
  region.textContent = '';
  // A new text node in a later task is what screen readers pick up, even for the same sentence twice.
  setTimeout(() => (region.textContent = text), 50);
}

let ids = 0;
export const uid = (prefix: string) => `${prefix}-${++ids}`;
