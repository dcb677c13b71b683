/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A workspace page's Snapshots view: take one (its files and volume; docs/workspaces.md), list this
// workspace's snapshots, make a new workspace from one, and Fork (a snapshot and workspaces from it).
import { api, messageOf } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';
import type { PanelContext } from './workspace';

interface Snapshot {
  id: string;
  name: string;
  workspaceId: string;
  sizeBytes: number;
  createdAt: string;
}

/** A name the API accepts, from what a person typed or the time. */
const nameFrom = (s: string) => s.trim().toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || `snap-${Date.now().toString(36)}`;

export function snapshotsPanel(ctx: PanelContext): HTMLElement {
  const list = h('ul', { class: 'snapshots', 'aria-label': 'Snapshots' });
  const error = h('p', { role: 'alert', class: 'error' });
  const status = h('p', { role: 'status', class: 'note' });
  const name = h('input', { id: uid('snap-name'), name: 'snapshot', autocomplete: 'off', placeholder: 'e.g. before-upgrade' });
  const take = h('button', { type: 'submit' }, 'Take snapshot');
  const fork = h('button', { type: 'button' }, 'Fork');

  async function load() {
    try {
      const { snapshots } = await api<{ snapshots: Snapshot[] }>('GET', '/api/snapshots', undefined, ctx.signal);
      const mine = snapshots.filter((s) => s.workspaceId === ctx.id);
      fill(list, mine.length ? mine.map(item) : h('li', { class: 'note' }, 'No snapshots yet.'));
    } catch (e) {
      if (!ctx.signal.aborted) error.textContent = messageOf(e);
    }
  }

  function item(s: Snapshot): HTMLElement {
    const restore = h('button', { type: 'button', 'aria-label': `New workspace from ${s.name}`, onclick: async () => {
      restore.disabled = true;
      try {
        const w = await api<{ id: string; name: string }>('POST', '/api/workspaces', { name: nameFrom(`${s.name}-${Date.now().toString(36)}`), snapshot: s.id });
        announce(`${w.name} created from ${s.name}`);
        location.hash = `#/w/${w.id}`;
      } catch (e) {
        error.textContent = messageOf(e);
        restore.disabled = false;
      }
    } }, 'New workspace from it');
    const mb = (s.sizeBytes / 1e6).toFixed(1);
    return h('li', {}, h('code', {}, s.name), h('span', { class: 'note' }, ` ${mb} MB, ${new Date(s.createdAt).toLocaleString()} `), restore);
  }

  async function act(label: string, run: () => Promise<string>) {
    take.disabled = fork.disabled = true;
    error.textContent = '';
    status.textContent = `${label}…`;
    try {
      status.textContent = await run();
      announce(status.textContent);
      await load();
    } catch (e) {
      status.textContent = '';
      error.textContent = messageOf(e);
    } finally {
      take.disabled = fork.disabled = false;
    }
  }

  fork.addEventListener('click', () =>
    void act('Forking', async () => {
      const r = await api<{ workspaces: { name: string }[] }>('POST', `/api/workspaces/${ctx.id}/fork`, { name: nameFrom(name.value || `fork-${Date.now().toString(36)}`), count: 1 });
      name.value = '';
      return `Forked: ${r.workspaces.map((w) => w.name).join(', ')}`;
    }),
  );
  const form = h(
    'form',
    {
      class: 'command',
      onsubmit: (e: Event) => {
        e.preventDefault();
        void act('Taking a snapshot', async () => {
          const s = await api<Snapshot>('POST', `/api/workspaces/${ctx.id}/snapshots`, { name: nameFrom(name.value) });
          name.value = '';
          return `Snapshot ${s.name} taken`;
        });
      },
    },
    h('label', { for: name.id }, 'Snapshot name'),
    h('div', { class: 'row' }, name, take, fork),
  );
  void load();
  return h('section', { 'aria-labelledby': 'snapshots-h' }, h('h2', { id: 'snapshots-h' }, 'Snapshots'), form, status, error, list);
}
