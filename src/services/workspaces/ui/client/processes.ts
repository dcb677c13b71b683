/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// A workspace page's Processes view: start a background process, list them (newest first, status
// and exit code), follow one's output live (the output stream: what is kept, then as written), and
// Kill (KILL to its process group). The list is read again after each action and every few seconds.
import { api, messageOf, readStream } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';
import type { PanelContext } from './workspace';

interface Proc {
  id: string;
  name?: string;
  command: string;
  status: 'running' | 'exited' | 'lost';
  exitCode?: number;
  startedAt: string;
}

const OUTPUT_MAX_CHARS = 200_000;
const REFRESH_MS = 3000;

export function processesPanel(ctx: PanelContext): HTMLElement {
  const base = `/api/workspaces/${ctx.id}/processes`;
  const list = h('ul', { class: 'processes', 'aria-label': 'Processes' });
  const error = h('p', { role: 'alert', class: 'error' });
  const output = h('pre', { class: 'out', role: 'log', 'aria-label': 'Process output', tabindex: '0' });
  const outputTitle = h('h3', {}, 'Output');
  let following: AbortController | undefined;
  const command = h('input', { id: uid('proc-cmd'), name: 'process', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. httpd -f -p 8080 -h /workspace' });
  const start = h('button', { type: 'submit' }, 'Start');

  async function load() {
    try {
      const { processes } = await api<{ processes: Proc[] }>('GET', base, undefined, ctx.signal);
      fill(list, processes.length ? processes.map(item) : h('li', { class: 'note' }, 'No processes yet.'));
    } catch (e) {
      if (!ctx.signal.aborted) error.textContent = messageOf(e);
    }
  }

  function item(p: Proc): HTMLElement {
    const label = p.name ?? p.command;
    const state = p.status === 'exited' ? `exited ${p.exitCode ?? ''}`.trim() : p.status;
    const show = h('button', { type: 'button', 'aria-label': `Output of ${label}`, onclick: () => void follow(p, label) }, 'Output');
    const kill = h('button', { type: 'button', class: 'danger', 'aria-label': `Kill ${label}`, disabled: p.status !== 'running', onclick: async () => {
      kill.disabled = true;
      try {
        await api('POST', `${base}/${p.id}/signal`, { signal: 'KILL' });
        announce(`${label} killed`);
        setTimeout(() => void load(), 300);
      } catch (e) {
        error.textContent = messageOf(e);
        kill.disabled = false;
      }
    } }, 'Kill');
    return h('li', {}, h('code', {}, label), ' ', h('span', { class: `status s-${p.status}` }, state), ' ', show, ' ', kill);
  }

  async function follow(p: Proc, label: string) {
    following?.abort();
    const ctl = new AbortController();
    following = ctl;
    ctx.signal.addEventListener('abort', () => ctl.abort(), { once: true });
    outputTitle.textContent = `Output of ${label}`;
    output.replaceChildren();
    const add = (text: string, cls: string) => {
      output.append(h('span', { class: cls }, text));
      while ((output.textContent?.length ?? 0) > OUTPUT_MAX_CHARS && output.firstChild) output.firstChild.remove();
      output.scrollTop = output.scrollHeight;
    };
    try {
      await readStream(`${base}/${p.id}/output?follow=true`, {
        signal: ctl.signal,
        onEvent: (e) => {
          const d = e.data as { data?: string; exitCode?: number };
          if (e.event === 'stdout' || e.event === 'stderr') add(d.data ?? '', e.event === 'stderr' ? 'l-error' : '');
          else if (e.event === 'exit') {
            add(`\n[exited ${d.exitCode ?? ''}]\n`, 'note');
            void load();
          }
        },
      });
    } catch (e) {
      if (!ctl.signal.aborted) error.textContent = messageOf(e);
    }
  }

  const form = h(
    'form',
    {
      class: 'command',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        start.disabled = true;
        error.textContent = '';
        try {
          const p = await api<Proc>('POST', base, { command: command.value });
          announce(`${p.command} started`);
          command.value = '';
          await load();
          void follow(p, p.name ?? p.command);
        } catch (err) {
          error.textContent = messageOf(err);
        } finally {
          start.disabled = false;
        }
      },
    },
    h('label', { for: command.id }, 'Process command'),
    h('div', { class: 'row' }, command, start),
  );
  const timer = setInterval(() => !document.hidden && void load(), REFRESH_MS);
  ctx.signal.addEventListener('abort', () => clearInterval(timer));
  void load();
  return h('section', { 'aria-labelledby': 'processes-h' }, h('h2', { id: 'processes-h' }, 'Processes'), form, error, list, outputTitle, output);
}
