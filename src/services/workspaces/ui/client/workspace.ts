/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// A workspace's page: status and actions (live from the store), stats (one request every few
// seconds while the page is open and the workspace runs), its URLs, a Logs view that follows live
// with a service filter, and a Command runner. Further panels (an agent chat) plug in through
// `panels` below: each gets the workspace and the page's signal, and returns a section.
import { api, messageOf, readStream } from './api';
import { actionButtons } from './actions';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';
import type { WorkspaceWithStats } from '../../../../../clients/typescript/src';
import type { Store, Workspace } from './store';

/** The page's workspace: the API's, with the status the store keeps current. */
type Detail = Workspace & Pick<WorkspaceWithStats, 'urls' | 'stats' | 'containerId'>;

export interface PanelContext {
  store: Store;
  id: string;
  signal: AbortSignal;
}
/** Sections after the built-in ones, in order; e.g. the agent chat (`Message`, `Send`). */
export const panels: ((ctx: PanelContext) => HTMLElement | null)[] = [];

const STATS_EVERY_MS = 5000;

/** A URL's password (the code server's secret) is in the link, not on the screen. */
const masked = (url: string) => url.replace(/^(https?:\/\/[^:@/]+):[^@/]+@/, '$1:•••@');
const LOG_LINES_MAX = 2000;

export function workspacePage(store: Store, id: string, signal: AbortSignal, onGone: () => void): HTMLElement {
  const error = h('p', { role: 'alert', class: 'error' });
  const showError = (m: string) => (error.textContent = m);
  const title = h('h1', { id: 'ws-page-title' }, store.get(id)?.name ?? 'Workspace');
  const status = h('span', { class: 'status' });
  const reason = h('p', { class: 'reason' });
  const head = h('div', { class: 'title-row' }, title, status);
  let actions: ReturnType<typeof actionButtons> | undefined;
  const actionsSlot = h('div');
  const stats = h('dl', { class: 'stats' }, h('dt', {}, 'Loading…'));
  const urls = h('ul', { class: 'urls' }, h('li', {}, 'Loading…'));
  let detail: Detail | undefined;

  async function loadDetail() {
    try {
      detail = await api<Detail>('GET', `/api/workspaces/${id}`, undefined, signal);
      store.update(id, { ...detail, status: store.get(id)?.status ?? detail.status });
      const s = detail.stats;
      fill(stats, h('dt', {}, 'CPU'), h('dd', {}, s.cpu), h('dt', {}, 'Memory'), h('dd', {}, s.memory), h('dt', {}, 'Disk'), h('dd', {}, s.disk));
      fill(
        urls,
        Object.entries({ 'Code server': detail.urls.codeServer, SSH: detail.urls.ssh, RDP: detail.urls.rdp }).map(([k, v]) =>
          h('li', {}, h('span', { class: 'k' }, k + ': '), /^https?:\/\//.test(v) ? h('a', { href: v, rel: 'noreferrer' }, masked(v)) : h('code', {}, v)),
        ),
      );
    } catch (e) {
      if (signal.aborted) return;
      if ((e as { status?: number }).status === 404) return onGone();
      showError(messageOf(e));
    }
  }

  function sync() {
    const w = store.get(id);
    if (!w) return;
    title.textContent = w.name;
    document.title = `${w.name} · Keel`;
    if (status.textContent && status.textContent !== w.status) announce(`${w.name} is ${w.status}`);
    status.textContent = w.status;
    status.className = `status s-${w.status}`;
    reason.textContent = w.status === 'failed' && w.reason ? `Failed: ${w.reason}` : '';
    if (!actions) {
      actions = actionButtons(store, w, { describedBy: 'ws-page-title', onError: showError, onDeleted: onGone });
      fill(actionsSlot, actions.el);
    }
    actions.update(w.status);
  }

  let lastStatus = store.get(id)?.status;
  const off = store.subscribe(() => {
    if (store.loaded && !store.get(id)) return onGone();
    sync();
    const now = store.get(id)?.status;
    if (now !== lastStatus) {
      const before = lastStatus;
      lastStatus = now;
      void loadDetail();
      // Back to running (started, restarted): the engine's log stream is a new one.
      if (now === 'running' && before !== undefined) void logs.restart();
    }
  });
  const timer = setInterval(() => {
    if (store.get(id)?.status === 'running' && !document.hidden) void loadDetail();
  }, STATS_EVERY_MS);
  signal.addEventListener('abort', () => {
    off();
    clearInterval(timer);
  });

  const logs = logsPanel(id, signal);
  sync();
  void loadDetail();
  void logs.restart();

  const extra = panels.map((p) => p({ store, id, signal })).filter((x): x is HTMLElement => x !== null);
  return h(
    'article',
    { class: 'page', 'aria-labelledby': 'ws-page-title' },
    h('p', {}, h('a', { href: '#/' }, '← All workspaces')),
    head,
    reason,
    actionsSlot,
    error,
    h('section', { 'aria-labelledby': 'stats-h' }, h('h2', { id: 'stats-h' }, 'Stats'), stats),
    h('section', { 'aria-labelledby': 'urls-h' }, h('h2', { id: 'urls-h' }, 'URLs'), urls),
    logs.el,
    commandPanel(id),
    extra,
  );
}

/** Follows the logs (SSE read with fetch) for the chosen service; restarts when the filter changes. */
function logsPanel(id: string, page: AbortSignal) {
  const view = h('pre', { role: 'log', 'aria-label': 'Logs', 'aria-live': 'off', tabindex: '0', class: 'logs' });
  const note = h('p', { class: 'note', role: 'status' });
  const service = h('select', { id: uid('svc') }, h('option', { value: '' }, 'all'), h('option', { value: 'main' }, 'main'));
  const services = new Set(['main']);
  let current: AbortController | undefined;

  function line(entry: { timestamp: string; service: string; level: string; message: string }) {
    if (!services.has(entry.service)) {
      services.add(entry.service);
      service.append(h('option', { value: entry.service }, entry.service));
    }
    const stick = view.scrollTop + view.clientHeight >= view.scrollHeight - 4;
    view.append(h('span', { class: `l-${entry.level}` }, `${entry.timestamp.slice(11, 19)} ${entry.service} ${entry.message}\n`));
    while (view.childNodes.length > LOG_LINES_MAX) view.firstChild?.remove();
    if (stick) view.scrollTop = view.scrollHeight;
  }

  async function restart() {
    current?.abort();
    const ctl = new AbortController();
    current = ctl;
    page.addEventListener('abort', () => ctl.abort(), { once: true });
    view.replaceChildren();
    note.textContent = 'Following…';
    const q = new URLSearchParams({ follow: 'true', tail: '200' });
    if (service.value) q.set('service', service.value);
    try {
      await readStream(`/api/workspaces/${id}/logs?${q}`, {
        signal: ctl.signal,
        onEvent: (e) => {
          if (e.event === 'message') line(e.data as never);
          else if (e.event === 'end' || e.event === 'dropped' || e.event === 'error') {
            const d = e.data as { reason?: string; error?: { message?: string } };
            note.textContent = `Stream ended: ${d.reason ?? d.error?.message ?? e.event}`;
          }
        },
      });
      if (!ctl.signal.aborted && note.textContent === 'Following…') note.textContent = 'Stream ended.';
    } catch (e) {
      if (!ctl.signal.aborted) note.textContent = `Logs: ${messageOf(e)}`;
    }
  }
  service.addEventListener('change', () => void restart());
  const el = h(
    'section',
    { 'aria-labelledby': 'logs-h' },
    h('div', { class: 'bar' }, h('h2', { id: 'logs-h' }, 'Logs'), h('label', { for: service.id }, 'Service '), service),
    note,
    view,
  );
  return { el, restart };
}

/** One command through POST /exec: exit code, stdout and stderr. */
function commandPanel(id: string): HTMLElement {
  const input = h('input', { id: uid('cmd'), name: 'command', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. ls -la /workspace' });
  const run = h('button', { type: 'submit' }, 'Run');
  // Not a live region (stdout may be long): the exit code alone is announced.
  const result = h('div', { class: 'result' });
  const form = h(
    'form',
    {
      class: 'command',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        run.disabled = true;
        fill(result, 'Running…');
        try {
          const r = await api<{ exitCode: number; stdout: string; stderr: string; duration: number; timedOut: boolean }>('POST', `/api/workspaces/${id}/exec`, {
            command: input.value,
          });
          fill(
            result,
            h('p', {}, `Exit code ${r.exitCode}`, r.timedOut ? ' (timed out)' : '', ` · ${Math.round(r.duration)} ms`),
            h('h3', {}, 'stdout'),
            h('pre', { class: 'out', 'aria-label': 'stdout', tabindex: '0' }, r.stdout),
            h('h3', {}, 'stderr'),
            h('pre', { class: 'out err', 'aria-label': 'stderr', tabindex: '0' }, r.stderr),
          );
          announce(`exit code ${r.exitCode}`);
        } catch (err) {
          fill(result, h('p', { class: 'error' }, messageOf(err)));
        } finally {
          run.disabled = false;
        }
      },
    },
    h('label', { for: input.id }, 'Command'),
    h('div', { class: 'row' }, input, run),
  );
  return h('section', { 'aria-labelledby': 'cmd-h' }, h('h2', { id: 'cmd-h' }, 'Run a command'), form, result);
}
