/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The media web app: sign in with an identity API key, then a hash router between the Library (#/:
// works as a grid; a series opens its seasons, a season its episodes: #/w/<id>), a work's page (its
// assets with Play) and Scan (#/scan: a library folder and its progress, read every second).
import { call, messageOf, ProblemError, services, setUnauthorizedHandler, token } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';
import { duration } from './format';
import { playerFor } from './player';

interface Work {
  id: string;
  kind: string;
  title: string;
  year: number;
  overview?: string;
}
interface Relation {
  parentWorkId: string;
  childWorkId: string;
  ordinal: number[];
}
interface AssetSummary {
  assetId: string;
  container: string;
  durationMs: number;
  indexed: boolean;
  sizeBytes: number;
  available?: boolean;
}

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;
const signOut = document.getElementById('sign-out') as HTMLButtonElement;
/** Kinds that live inside another work: the library grid shows their parents. */
const NESTED = new Set(['season', 'episode']);
const PAGE_SIZE = 200;
let view: AbortController | undefined;

function signInPage(message?: string): HTMLElement {
  const key = h('input', { id: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const error = h('p', { role: 'alert', class: 'error' }, message ?? '');
  const button = h('button', { type: 'submit' }, 'Sign in');
  document.title = 'Sign in · Keel media';
  return h('section', { class: 'page signin' }, h('h1', {}, 'Sign in'),
    h('p', {}, 'Paste your identity API key (', h('code', {}, 'keel_ak_…'), '). The session it opens stays in this tab only.'),
    h('form', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        button.disabled = true;
        try {
          const s = await call<{ accessToken: string }>('identity', 'POST', '/sessions', { apiKey: key.value.trim() });
          token.set(s.accessToken);
          start();
        } catch (err) {
          error.textContent = err instanceof ProblemError && err.status === 401 ? 'That API key was refused.' : messageOf(err);
          key.focus();
        } finally {
          button.disabled = false;
        }
      },
    }, h('label', { for: 'api-key' }, 'API key'), h('div', { class: 'row' }, key, button), error));
}

function showSignIn(message?: string) {
  view?.abort();
  token.clear();
  nav.hidden = signOut.hidden = true;
  fill(main, signInPage(message));
  document.getElementById('api-key')?.focus();
}

/** A poster when the catalog has one (the image route answers), else the title on a plain card. */
async function poster(w: Work): Promise<HTMLElement> {
  const { catalogUrl } = await services();
  const img = h('img', { src: `${catalogUrl}/works/${encodeURIComponent(w.id)}/images/poster?width=300`, alt: '', loading: 'lazy' });
  img.addEventListener('error', () => img.remove());
  return h('div', { class: 'poster' }, img, h('span', { class: 'initial', 'aria-hidden': 'true' }, w.title.slice(0, 1)));
}

async function card(w: Work): Promise<HTMLElement> {
  return h('li', { class: 'card' }, h('a', { href: `#/w/${w.id}` }, await poster(w), h('span', { class: 'title' }, w.title), h('span', { class: 'note' }, [w.year || '', w.kind].filter(Boolean).join(' · '))));
}

async function libraryPage(signal: AbortSignal): Promise<HTMLElement> {
  document.title = 'Library · Keel media';
  const { works } = await call<{ works: Work[] }>('catalog', 'GET', `/works?pageSize=${PAGE_SIZE}`, undefined, signal);
  const shown = works.filter((w) => !NESTED.has(w.kind)).sort((a, b) => a.title.localeCompare(b.title));
  return h('section', { class: 'page', 'aria-labelledby': 'library-h' }, h('h1', { id: 'library-h' }, 'Library'),
    shown.length ? h('ul', { class: 'grid', 'aria-label': 'Works' }, await Promise.all(shown.map(card))) : h('p', {}, 'Nothing yet: ', h('a', { href: '#/scan' }, 'scan a library folder'), '.'));
}

async function workPage(id: string, signal: AbortSignal): Promise<HTMLElement> {
  const [{ work }, { relations }] = await Promise.all([
    call<{ work: Work }>('catalog', 'GET', `/works/${encodeURIComponent(id)}`, undefined, signal),
    call<{ relations: Relation[] }>('catalog', 'GET', `/works/${encodeURIComponent(id)}/relations`, undefined, signal),
  ]);
  document.title = `${work.title} · Keel media`;
  const head = [h('p', {}, h('a', { href: '#/' }, '← Library')), h('h1', { id: 'work-h' }, work.title), h('p', { class: 'note' }, [work.year || '', work.kind].filter(Boolean).join(' · ')), work.overview ? h('p', {}, work.overview) : null];
  const children = relations.filter((r) => r.parentWorkId === id);
  if (children.length) {
    // A series' seasons or a season's episodes, in their order.
    const works = await Promise.all(children.map((r) => call<{ work: Work }>('catalog', 'GET', `/works/${encodeURIComponent(r.childWorkId)}`, undefined, signal).then((x) => ({ r, w: x.work }))));
    const label = (r: Relation, w: Work) => (w.kind === 'season' ? `Season ${r.ordinal.at(-1)}` : w.kind === 'episode' ? `${r.ordinal.at(-1)}. ${w.title}` : w.title);
    return h('article', { class: 'page', 'aria-labelledby': 'work-h' }, head,
      h('h2', {}, work.kind === 'series' ? 'Seasons' : 'Episodes'),
      h('ul', { class: 'children', 'aria-label': work.kind === 'series' ? 'Seasons' : 'Episodes' }, works.map(({ r, w }) => h('li', {}, h('a', { href: `#/w/${w.id}` }, label(r, w))))));
  }
  const { assets } = await call<{ assets: AssetSummary[] }>('catalog', 'GET', `/works/${encodeURIComponent(id)}/assets`, undefined, signal);
  const stage = h('div', { class: 'stage' });
  const rows = assets.map((a) =>
    h('tr', {},
      h('td', {}, a.container),
      h('td', {}, a.durationMs ? duration(a.durationMs) : '–'),
      h('td', {}, `${(a.sizeBytes / 1e6).toFixed(1)} MB`),
      h('td', {}, a.indexed && a.available !== false ? h('button', { type: 'button', 'aria-label': `Play ${a.container} ${duration(a.durationMs)}`, onclick: () => playerFor(stage, a.assetId, signal) }, 'Play') : h('span', { class: 'note' }, a.available === false ? 'offline' : 'not indexed'))));
  return h('article', { class: 'page', 'aria-labelledby': 'work-h' }, head, stage,
    h('table', { class: 'assets' }, h('caption', {}, 'Files'), h('thead', {}, h('tr', {}, ['Container', 'Duration', 'Size', ''].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', {}, rows)));
}

function scanPage(signal: AbortSignal): HTMLElement {
  document.title = 'Scan · Keel media';
  const folder = h('input', { id: uid('folder'), autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. movies (empty: every media root)' });
  const button = h('button', { type: 'submit' }, 'Scan');
  const status = h('p', { role: 'status' });
  const error = h('p', { role: 'alert', class: 'error' });
  const counts = h('dl', { class: 'counts' });
  const progress = h('progress', { hidden: true, 'aria-label': 'Scan progress' });
  return h('section', { class: 'page', 'aria-labelledby': 'scan-h' }, h('h1', { id: 'scan-h' }, 'Scan'),
    h('form', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        button.disabled = true;
        error.textContent = '';
        try {
          const path = folder.value.trim();
          let scan = await call<{ id: string; status: string; counts?: Record<string, number>; error?: string }>('catalog', 'POST', '/library/scans', path ? { path } : {}, signal);
          progress.hidden = false;
          while (scan.status === 'queued' || scan.status === 'running') {
            status.textContent = `Scan ${scan.status}…`;
            if (scan.counts) fill(counts, Object.entries(scan.counts).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
            await new Promise((r) => setTimeout(r, 1000));
            if (signal.aborted) return;
            scan = await call('catalog', 'GET', `/library/scans/${scan.id}`, undefined, signal);
          }
          progress.hidden = true;
          if (scan.counts) fill(counts, Object.entries(scan.counts).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
          status.textContent = scan.status === 'done' ? 'Scan done' : `Scan ${scan.status}${scan.error ? `: ${scan.error}` : ''}`;
          announce(status.textContent);
        } catch (err) {
          progress.hidden = true;
          error.textContent = messageOf(err);
        } finally {
          button.disabled = false;
        }
      },
    }, h('label', { for: folder.id }, 'Library folder'), h('div', { class: 'row' }, folder, button)),
    progress, status, error, counts);
}

async function route() {
  if (!token.get()) return showSignIn();
  view?.abort();
  view = new AbortController();
  const signal = view.signal;
  const m = /^#\/w\/([A-Za-z0-9_-]+)$/.exec(location.hash);
  try {
    const page = location.hash === '#/scan' ? scanPage(signal) : m ? await workPage(m[1]!, signal) : await libraryPage(signal);
    if (!signal.aborted) fill(main, page);
  } catch (e) {
    if (!signal.aborted) fill(main, h('section', { class: 'page' }, h('p', { role: 'alert', class: 'error' }, messageOf(e)), h('p', {}, h('a', { href: '#/' }, '← Library'))));
  }
  main.focus({ preventScroll: true });
}

function start() {
  nav.hidden = signOut.hidden = false;
  if (location.hash.startsWith('#/')) void route();
  else location.hash = '#/';
}

setUnauthorizedHandler((message) => showSignIn(`Signed out: ${message}`));
signOut.addEventListener('click', () => showSignIn());
window.addEventListener('hashchange', () => void route());
if (token.get()) start();
else showSignIn();
