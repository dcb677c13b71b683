/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// The dashboard's entry: sign-in with a token (kept in this tab's session storage only), then a
// hash router between the workspace list (#/), a workspace's page (#/w/<id>), Templates, Webhooks and Usage.
import { api, ApiError, messageOf, setUnauthorizedHandler, token } from './api';
import { announce, fill, h } from '../../../../platform/browser/dom';
import { listPage } from './list';
import { createStore } from './store';
import { chatPanel } from './chat';
import { terminalPanel } from './terminal';
import { previewsPanel } from './previews';
import { filesPanel } from './files';
import { processesPanel } from './processes';
import { snapshotsPanel } from './snapshots';
import { panels, workspacePage } from './workspace';
import { webhooksPage } from './webhooks';
import { usagePage } from './usage';
import { templatesPage } from './templates';

const main = document.getElementById('main')!;
const live = document.getElementById('live')!;
const signOut = document.getElementById('sign-out') as HTMLButtonElement;
const store = createStore();
panels.push(filesPanel, processesPanel, terminalPanel, previewsPanel, snapshotsPanel, chatPanel);
let view: AbortController | undefined;
/** Set once a token was accepted: a 401 after that means it expired or was revoked. */
let signedIn = false;

store.onConnection((c) => (live.textContent = c === 'live' ? 'Live' : c === 'connecting' ? 'Connecting…' : 'Reconnecting…'));

function signInPage(message?: string): HTMLElement {
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const error = h('p', { role: 'alert', class: 'error' }, message ?? '');
  const button = h('button', { type: 'submit' }, 'Sign in');
  return h(
    'section',
    { class: 'page signin' },
    h('h1', {}, 'Sign in to Keel'),
    h('p', {}, 'Paste a workspace-API token. ', h('code', {}, 'npm run dev'), ' prints one for the admin; ', h('code', {}, 'keel token --sub <you>'), ' makes one. It stays in this tab only.'),
    h(
      'form',
      {
        onsubmit: async (e: Event) => {
          e.preventDefault();
          button.disabled = true;
          token.set(input.value.trim());
          try {
            await api('GET', '/api/workspaces?status=running');
            start();
          } catch (err) {
            token.clear();
            error.textContent = err instanceof ApiError && err.status === 401 ? `That token was refused: ${err.message}` : messageOf(err);
            input.focus();
          } finally {
            button.disabled = false;
          }
        },
      },
      h('label', { for: 'token' }, 'Token'),
      h('div', { class: 'row' }, input, button),
      error,
    ),
  );
}

function showSignIn(message?: string) {
  signedIn = false;
  view?.abort();
  store.stop();
  token.clear();
  signOut.hidden = true;
  live.textContent = '';
  document.title = 'Sign in · Keel';
  fill(main, signInPage(message));
  (document.getElementById('token') as HTMLInputElement).focus();
}

function route() {
  if (!token.get()) return showSignIn();
  view?.abort();
  view = new AbortController();
  const m = /^#\/w\/([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (m) {
    fill(main, workspacePage(store, m[1]!, view.signal, () => {
      announce('That workspace is gone');
      location.hash = '#/';
    }));
  } else if (location.hash === '#/webhooks') {
    fill(main, webhooksPage(view.signal));
  } else if (location.hash === '#/templates') {
    fill(main, templatesPage(view.signal));
  } else if (location.hash === '#/usage') {
    fill(main, usagePage(view.signal));
  } else {
    document.title = 'Workspaces · Keel';
    fill(main, listPage(store, view.signal));
  }
  // Move focus to the new page's heading area for screen readers, as a page load would.
  if (document.activeElement === document.body || !main.contains(document.activeElement)) main.focus({ preventScroll: true });
}

function start() {
  signedIn = true;
  signOut.hidden = false;
  store.start();
  if (location.hash.startsWith('#/')) route();
  else location.hash = '#/';
}

setUnauthorizedHandler((message) => {
  if (signedIn) showSignIn(`Signed out: ${message}`);
});
signOut.addEventListener('click', () => showSignIn());
window.addEventListener('hashchange', () => {
  if (token.get()) route();
});
if (token.get()) start();
else showSignIn();

// The skip link moves focus without touching the hash the router reads.
document.querySelector('.skip')?.addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});
