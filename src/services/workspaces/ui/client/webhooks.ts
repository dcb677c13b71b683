/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The Webhooks page (#/webhooks): register a receiver with its events and secret, turn one off and
// on, Ping it, Delete it, and read its delivery log (status, attempts, the last answer's code and
// time) with Redeliver per delivery. The log is read again every few seconds while it is open.
import { api, messageOf } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';

interface Webhook {
  id: string;
  url: string;
  events: string[];
  active: boolean;
  disabledReason: string | null;
}
interface Delivery {
  id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  responseStatus: number | null;
  error: string | null;
  durationMs: number | null;
  createdAt: string;
}

const EVENTS = ['*', 'workspace.created', 'workspace.started', 'workspace.stopped', 'workspace.restarted', 'workspace.deleted', 'workspace.failed', 'workspace.paused', 'workspace.resumed', 'webhook.disabled'];
const REFRESH_MS = 3000;

export function webhooksPage(signal: AbortSignal): HTMLElement {
  const error = h('p', { role: 'alert', class: 'error' });
  const list = h('ul', { class: 'webhooks', 'aria-label': 'Registered webhooks' });
  const log = h('section', { 'aria-labelledby': 'deliveries-h', hidden: true });
  let open: { hook: Webhook; timer: ReturnType<typeof setInterval> } | undefined;
  signal.addEventListener('abort', () => open && clearInterval(open.timer));

  const url = h('input', { id: uid('wh-url'), type: 'url', required: true, placeholder: 'https://example.com/hooks/keel', autocomplete: 'off' });
  const secret = h('input', { id: uid('wh-secret'), type: 'password', required: true, minlength: '16', autocomplete: 'new-password' });
  const boxes = EVENTS.map((e) => ({ e, box: h('input', { type: 'checkbox', id: uid('wh-ev'), value: e, checked: e === '*' }) }));
  const register = h('button', { type: 'submit' }, 'Register');

  async function load() {
    try {
      const { webhooks } = await api<{ webhooks: Webhook[] }>('GET', '/api/webhooks', undefined, signal);
      fill(list, webhooks.length ? webhooks.map(item) : h('li', { class: 'note' }, 'No webhooks yet.'));
    } catch (e) {
      if (!signal.aborted) error.textContent = messageOf(e);
    }
  }

  const run = async (b: HTMLButtonElement, f: () => Promise<unknown>) => {
    b.disabled = true;
    error.textContent = '';
    try {
      await f();
    } catch (e) {
      error.textContent = messageOf(e);
    } finally {
      b.disabled = false;
    }
  };

  function item(w: Webhook): HTMLElement {
    const state = w.active ? 'on' : `off${w.disabledReason ? ` (${w.disabledReason})` : ''}`;
    const deliveries = h('button', { type: 'button', 'aria-label': `Deliveries of ${w.url}` }, 'Deliveries');
    deliveries.onclick = () => showLog(w);
    const ping = h('button', { type: 'button', 'aria-label': `Ping ${w.url}` }, 'Ping');
    ping.onclick = () => run(ping, async () => {
      await api('POST', `/api/webhooks/${w.id}/ping`);
      announce('ping sent');
      showLog(w);
    });
    const toggle = h('button', { type: 'button', 'aria-label': `${w.active ? 'Disable' : 'Enable'} ${w.url}` }, w.active ? 'Disable' : 'Enable');
    toggle.onclick = () => run(toggle, async () => {
      await api('PATCH', `/api/webhooks/${w.id}`, { active: !w.active });
      await load();
    });
    const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${w.url}` }, 'Delete');
    del.onclick = () => run(del, async () => {
      await api('DELETE', `/api/webhooks/${w.id}`);
      if (open?.hook.id === w.id) closeLog();
      await load();
    });
    return h('li', {}, h('code', {}, w.url), h('span', { class: 'note' }, ` ${w.events.join(', ')} · ${state} `), deliveries, ping, toggle, del);
  }

  function closeLog() {
    if (open) clearInterval(open.timer);
    open = undefined;
    log.hidden = true;
  }

  function showLog(w: Webhook) {
    closeLog();
    const body = h('tbody');
    const table = h('table', { class: 'deliveries' }, h('caption', {}, `Deliveries to ${w.url}, newest first`),
      h('thead', {}, h('tr', {}, ...['Event', 'Status', 'Attempts', 'Response', 'Time', 'Received', ''].map((c) => h('th', { scope: 'col' }, c)))), body);
    const refresh = async () => {
      try {
        const { deliveries } = await api<{ deliveries: Delivery[] }>('GET', `/api/webhooks/${w.id}/deliveries`, undefined, signal);
        fill(body, deliveries.length ? deliveries.map((d) => row(w, d)) : h('tr', {}, h('td', { colspan: '7' }, 'No deliveries yet.')));
      } catch (e) {
        if (!signal.aborted) error.textContent = messageOf(e);
      }
    };
    open = { hook: w, timer: setInterval(() => !document.hidden && void refresh(), REFRESH_MS) };
    fill(log, h('h2', { id: 'deliveries-h' }, 'Deliveries'), table);
    log.hidden = false;
    void refresh();
  }

  function row(w: Webhook, d: Delivery): HTMLElement {
    const again = h('button', { type: 'button', 'aria-label': `Redeliver ${d.event} ${d.id}` }, 'Redeliver');
    again.onclick = () => run(again, async () => {
      await api('POST', `/api/webhooks/${w.id}/deliveries/${d.id}/redeliver`);
      announce(`${d.event} redelivered`);
    });
    const response = d.responseStatus !== null ? String(d.responseStatus) : d.error ?? '–';
    return h('tr', {},
      h('td', {}, d.event),
      h('td', {}, h('span', { class: `status d-${d.status}` }, d.status)),
      h('td', {}, d.attempts),
      h('td', {}, response),
      h('td', {}, d.durationMs === null ? '–' : `${d.durationMs} ms`),
      h('td', {}, new Date(d.createdAt).toLocaleTimeString()),
      h('td', {}, again));
  }

  const form = h('form', {
    class: 'create',
    onsubmit: (e: Event) => {
      e.preventDefault();
      const events = boxes.filter((b) => b.box.checked).map((b) => b.e);
      void run(register, async () => {
        await api('POST', '/api/webhooks', { url: url.value.trim(), secret: secret.value, events: events.length ? events : ['*'] });
        announce('webhook registered');
        url.value = secret.value = '';
        await load();
      });
    },
  },
    h('div', { class: 'field' }, h('label', { for: url.id }, 'URL'), url),
    h('div', { class: 'field' }, h('label', { for: secret.id }, 'Secret'), secret, h('small', {}, '16 characters or more; it signs every delivery and is never shown again.')),
    h('fieldset', { class: 'events' }, h('legend', {}, 'Events'), boxes.map(({ e, box }) => h('span', {}, box, ' ', h('label', { for: box.id }, e === '*' ? 'all events (*)' : e)))),
    h('div', {}, register),
  );
  void load();
  document.title = 'Webhooks · Keel';
  return h('section', { class: 'page', 'aria-labelledby': 'webhooks-title' }, h('h1', { id: 'webhooks-title' }, 'Webhooks'),
    h('p', { class: 'note' }, 'Workspace events POSTed to your URL, signed (docs/webhooks.md).'), form, error, list, log);
}
