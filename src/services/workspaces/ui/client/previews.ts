/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A workspace page's Previews panel: its preview links (each a host of its own, opened in a new tab
// with Open), `New preview` showing a form that makes one for a port, and a Revoke button per live link.
import { api, messageOf } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';
import type { PanelContext } from './workspace';

interface Preview {
  id: string;
  port: number;
  url: string;
  expiresAt: string;
  revoked?: boolean;
}

export function previewsPanel(ctx: PanelContext): HTMLElement {
  const base = `/api/workspaces/${ctx.id}/previews`;
  const list = h('ul', { class: 'previews' });
  const error = h('p', { role: 'alert', class: 'error' });
  const port = h('input', { id: uid('pv-port'), name: 'port', type: 'number', min: '1', max: '65535', required: true, inputmode: 'numeric', placeholder: 'e.g. 5173' });
  const make = h('button', { type: 'submit' }, 'Create');
  const reveal = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New preview');

  function item(p: Preview): HTMLElement {
    const ended = p.revoked || Date.parse(p.expiresAt) <= Date.now();
    const revoke = h('button', { type: 'button', 'aria-label': `Revoke the preview of port ${p.port}` }, 'Revoke');
    revoke.addEventListener('click', async () => {
      revoke.disabled = true;
      try {
        await api('DELETE', `${base}/${p.id}`);
        announce(`preview of port ${p.port} revoked`);
        await load();
      } catch (e) {
        error.textContent = messageOf(e);
        revoke.disabled = false;
      }
    });
    return h(
      'li',
      {},
      h('span', { class: 'k' }, `Port ${p.port}: `),
      // A new tab without an opener: the preview is another origin and gets no handle on this page.
      h('code', {}, p.url),
      ' ',
      ended ? '' : h('a', { href: p.url, target: '_blank', rel: 'noopener noreferrer', class: 'button', 'aria-label': `Open the preview of port ${p.port}` }, 'Open'),
      ' ',
      h('span', { class: 'note' }, p.revoked ? '(revoked)' : ended ? '(expired)' : `until ${new Date(p.expiresAt).toLocaleString()}`),
      ended ? '' : revoke,
    );
  }

  async function load() {
    try {
      const { previews } = await api<{ previews: Preview[] }>('GET', base, undefined, ctx.signal);
      fill(list, previews.length ? previews.map(item) : h('li', {}, 'No previews yet.'));
    } catch (e) {
      if (!ctx.signal.aborted) error.textContent = messageOf(e);
    }
  }

  const form = h(
    'form',
    {
      class: 'command',
      hidden: true,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        make.disabled = true;
        error.textContent = '';
        try {
          const p = await api<Preview>('POST', base, { port: Number(port.value) });
          announce(`preview of port ${p.port} created`);
          await load();
        } catch (err) {
          error.textContent = messageOf(err);
        } finally {
          make.disabled = false;
        }
      },
    },
    h('label', { for: port.id }, 'Port'),
    h('div', { class: 'row' }, port, make),
  );
  reveal.addEventListener('click', () => {
    form.hidden = !form.hidden;
    reveal.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) port.focus();
  });
  void load();
  return h(
    'section',
    { 'aria-labelledby': 'previews-h' },
    h('h2', { id: 'previews-h' }, 'Previews'),
    h('p', { class: 'note' }, 'A link to a port of the workspace, on a host name of its own; anyone holding it reaches the port until it expires or is revoked.'),
    reveal,
    form,
    error,
    list,
  );
}
