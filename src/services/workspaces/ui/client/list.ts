/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// The workspace list: name (a link to its page) and status text, live from the store's one event
// stream; `New workspace` opens the create form; each row has Start, Stop, Restart and Delete.
// Rows are kept by id and updated in place, so keyboard focus survives a status change.
import { api, messageOf } from './api';
import { actionButtons } from './actions';
import { announce, h, uid } from '../../../../platform/browser/dom';
import type { Store, Workspace } from './store';
import type { TemplateList } from '../../../../../clients/typescript/src';

export function listPage(store: Store, signal: AbortSignal): HTMLElement {
  const error = h('p', { role: 'alert', class: 'error' });
  const showError = (msg: string) => (error.textContent = msg);
  const body = h('tbody');
  const empty = h('p', { class: 'empty' }, 'Loading…');
  const table = h(
    'table',
    { class: 'workspaces', 'aria-labelledby': 'ws-title' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Template'), h('th', { scope: 'col' }, 'Actions'))),
    body,
  );
  const rows = new Map<string, { tr: HTMLTableRowElement; status: HTMLElement; template: HTMLElement; reason: HTMLElement; update(s: string): void }>();

  function row(w: Workspace) {
    const nameId = uid('ws-name');
    const status = h('span', { class: `status s-${w.status}` }, w.status);
    const reason = h('span', { class: 'reason' });
    const template = h('td', { 'data-label': 'Template' }, w.template ?? '');
    const actions = actionButtons(store, w, { describedBy: nameId, onError: showError });
    const tr = h(
      'tr',
      { 'data-id': w.id },
      h('th', { scope: 'row', 'data-label': 'Name' }, h('a', { href: `#/w/${w.id}`, id: nameId }, w.name)),
      h('td', { 'data-label': 'Status' }, status, reason),
      template,
      h('td', { 'data-label': 'Actions' }, actions.el),
    );
    return { tr, status, template, reason, update: actions.update };
  }

  function render() {
    const list = store.list();
    const seen = new Set<string>();
    let before: ChildNode | null = body.firstChild;
    for (const w of list) {
      seen.add(w.id);
      let r = rows.get(w.id);
      if (!r) rows.set(w.id, (r = row(w)));
      if (r.status.textContent !== w.status) {
        // Changes made elsewhere (another tab, a script, the engine) are heard, not only seen.
        if (r.status.textContent) announce(`${w.name} is ${w.status}`);
        r.status.textContent = w.status;
        r.status.className = `status s-${w.status}`;
      }
      r.reason.textContent = w.status === 'failed' && w.reason ? ` (${w.reason})` : '';
      if (w.template && r.template.textContent !== w.template) r.template.textContent = w.template;
      r.update(w.status);
      if (r.tr !== before) body.insertBefore(r.tr, before);
      before = r.tr.nextSibling;
    }
    for (const [id, r] of rows) {
      if (seen.has(id)) continue;
      r.tr.remove();
      rows.delete(id);
    }
    empty.textContent = !store.loaded ? 'Loading…' : list.length ? '' : 'No workspaces yet.';
    table.hidden = list.length === 0;
  }

  const form = createForm(store, showError);
  const toggle = h('button', {
    type: 'button',
    'aria-expanded': 'false',
    'aria-controls': form.id,
    onclick: () => {
      const open = form.hidden;
      form.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
      if (open) (form.querySelector('input') as HTMLInputElement).focus();
    },
  }, 'New workspace');
  form.addEventListener('created', () => {
    form.hidden = true;
    toggle.setAttribute('aria-expanded', 'false');
    toggle.focus();
  });

  const off = store.subscribe(render);
  signal.addEventListener('abort', () => off());
  render();
  return h('section', { class: 'page' }, h('div', { class: 'bar' }, h('h1', { id: 'ws-title' }, 'Workspaces'), toggle), form, error, empty, table);
}

function createForm(store: Store, showError: (m: string) => void): HTMLFormElement {
  const field = (label: string, input: HTMLElement, hint?: string) => {
    const id = uid('f');
    input.id = id;
    const hintEl = hint ? h('small', { id: id + '-hint' }, hint) : null;
    if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
    return h('div', { class: 'field' }, h('label', { for: id }, label), input, hintEl);
  };
  const name = h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9._\\-]{0,62}', autocomplete: 'off', spellcheck: 'false' });
  // The choices come from the server's template registry (GET /api/templates): the built-ins and the
  // templates with a built version (one still building, or failed, cannot start a workspace); the field stays free text.
  const templates = h('datalist', { id: 'templates' });
  api<TemplateList>('GET', '/api/templates').then(
    (r) => templates.replaceChildren(...r.templates.filter((t) => t.builtIn || Number(t.version ?? 0) > 0).map((t) => h('option', { value: t.name, label: `${t.name}: ${t.description}` }))),
    (err) => showError(`Templates: ${messageOf(err)}`),
  );
  const template = h('input', { name: 'template', list: 'templates', value: 'bun-typescript', required: true, autocomplete: 'off' });
  const type = h('select', { name: 'type' }, h('option', { value: 'persistent' }, 'persistent'), h('option', { value: 'temporary' }, 'temporary'));
  const repo = h('input', { name: 'repo', type: 'text', inputmode: 'url', autocomplete: 'off', placeholder: 'https://… (optional)' });
  const branch = h('input', { name: 'branch', autocomplete: 'off', placeholder: 'optional' });
  const create = h('button', { type: 'submit' }, 'Create');
  const form: HTMLFormElement = h(
    'form',
    {
      id: uid('create'),
      class: 'create',
      'aria-label': 'New workspace',
      hidden: true,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        create.disabled = true;
        const body: Record<string, unknown> = { name: name.value.trim(), template: template.value.trim(), type: type.value };
        if (repo.value.trim()) body.repo = { url: repo.value.trim(), ...(branch.value.trim() ? { branch: branch.value.trim() } : {}) };
        try {
          const w = await api<Workspace>('POST', '/api/workspaces', body);
          store.update(w.id, w);
          announce(`${w.name} created, ${w.status}`);
          form.reset();
          showError('');
          form.dispatchEvent(new Event('created'));
        } catch (err) {
          showError(`Create: ${messageOf(err)}`);
        } finally {
          create.disabled = false;
        }
      },
    },
    h('h2', {}, 'New workspace'),
    field('Name', name, 'lowercase letters, digits, . _ -'),
    field('Template', template),
    templates,
    field('Type', type),
    field('Repository', repo),
    field('Branch', branch),
    h('div', { class: 'actions' }, create),
  );
  return form;
}
