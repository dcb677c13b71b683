/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The Templates page (#/templates): the templates a workspace can start from (built-ins, yours and
// public ones, with their status), `New template` from a Dockerfile, and a build's output followed
// live until it ends (docs/templates.md).
import { api, messageOf, readStream } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';

interface TemplateInfo {
  name: string;
  description: string;
  builtIn: boolean;
  public: boolean;
  owner: string | null;
  id?: string;
  status?: 'building' | 'ready' | 'failed';
  reason?: string | null;
  version?: number;
}

export function templatesPage(signal: AbortSignal): HTMLElement {
  const error = h('p', { role: 'alert', class: 'error' });
  const list = h('ul', { class: 'templates', 'aria-label': 'Templates' });
  const output = h('pre', { class: 'out', role: 'log', 'aria-label': 'Build output', tabindex: '0' });
  const outputTitle = h('h2', { id: 'build-h' }, 'Build output');
  const buildSection = h('section', { 'aria-labelledby': 'build-h', hidden: true }, outputTitle, output);
  let following: AbortController | undefined;

  async function load() {
    try {
      const { templates } = await api<{ templates: TemplateInfo[] }>('GET', '/api/templates', undefined, signal);
      fill(list, templates.map((t) => h('li', {},
        h('code', {}, t.name), ' ',
        h('span', { class: `status s-${t.status === 'ready' || t.builtIn ? 'running' : t.status === 'failed' ? 'failed' : 'starting'}` }, t.builtIn ? 'built in' : `${t.status} · version ${t.version}`),
        ' ', h('span', { class: 'note' }, t.builtIn ? t.description : `${t.public ? 'public, ' : ''}by ${t.owner}${t.reason ? ` · ${t.reason}` : ''}`))));
    } catch (e) {
      if (!signal.aborted) error.textContent = messageOf(e);
    }
  }

  async function follow(id: string, buildId: string, name: string) {
    following?.abort();
    const ctl = new AbortController();
    following = ctl;
    signal.addEventListener('abort', () => ctl.abort(), { once: true });
    buildSection.hidden = false;
    outputTitle.textContent = `Build output of ${name}`;
    output.replaceChildren();
    try {
      await readStream(`/api/templates/${id}/builds/${buildId}/logs?follow=true`, {
        signal: ctl.signal,
        onEvent: (e) => {
          if (e.event === 'done') {
            const d = e.data as { status: string; reason?: string };
            output.append(`\n${name}: ${d.status}${d.reason ? ` (${d.reason})` : ''}\n`);
            announce(`${name} ${d.status}`);
            void load();
          } else output.append(`${(e.data as { message: string }).message}\n`);
          output.scrollTop = output.scrollHeight;
        },
      });
    } catch (e) {
      if (!ctl.signal.aborted) error.textContent = messageOf(e);
    }
  }

  const name = h('input', { id: uid('tpl-name'), required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. tools' });
  const dockerfile = h('textarea', { id: uid('tpl-df'), rows: '8', required: true, spellcheck: 'false' });
  dockerfile.value = 'FROM keel/minimal\n';
  const create = h('button', { type: 'submit' }, 'Create');
  const form = h('form', {
    class: 'create',
    hidden: true,
    onsubmit: async (e: Event) => {
      e.preventDefault();
      create.disabled = true;
      error.textContent = '';
      try {
        const t = await api<{ id: string; name: string; buildId: string }>('POST', '/api/templates', { name: name.value.trim(), dockerfile: dockerfile.value });
        announce(`${t.name} is building`);
        form.hidden = true;
        await load();
        void follow(t.id, t.buildId, t.name);
      } catch (err) {
        error.textContent = messageOf(err);
      } finally {
        create.disabled = false;
      }
    },
  },
    h('div', { class: 'field' }, h('label', { for: name.id }, 'Name'), name),
    h('div', { class: 'field wide' }, h('label', { for: dockerfile.id }, 'Dockerfile'), dockerfile, h('small', {}, 'FROM keel/minimal or keel/bun-typescript works offline; steps have no network.')),
    h('div', {}, create),
  );
  const reveal = h('button', { type: 'button', 'aria-expanded': 'false', onclick: () => {
    form.hidden = !form.hidden;
    reveal.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) name.focus();
  } }, 'New template');
  void load();
  document.title = 'Templates · Keel';
  return h('section', { class: 'page', 'aria-labelledby': 'templates-title' }, h('h1', { id: 'templates-title' }, 'Templates'),
    h('p', { class: 'note' }, 'What a workspace starts from: the built-in ones, yours and public ones (docs/templates.md).'), reveal, form, error, list, buildSection);
}
