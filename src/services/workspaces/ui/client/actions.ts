/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// Start, Stop, Restart, Pause, Resume and Delete for one workspace, the same on the list and on its page. Which
// buttons are enabled follows the status (the API's state machine); Delete asks first, in a dialog.
import { api, messageOf } from './api';
import { announce, h } from '../../../../platform/browser/dom';
import type { Store, Workspace } from './store';

const ENABLED: Record<'Start' | 'Stop' | 'Restart' | 'Pause' | 'Resume', string[]> = {
  Start: ['stopped', 'failed'],
  Stop: ['running', 'starting', 'restarting', 'paused'],
  Restart: ['running', 'stopped'],
  Pause: ['running'],
  Resume: ['paused'],
};

/** The buttons; `describedBy` names the element that says which workspace they act on. */
export function actionButtons(store: Store, w: Workspace, opts: { describedBy?: string; onError: (msg: string) => void; onDeleted?: () => void }) {
  const act = (label: keyof typeof ENABLED, path: string) =>
    h('button', {
      type: 'button',
      'aria-describedby': opts.describedBy,
      disabled: !ENABLED[label].includes(w.status),
      onclick: async (e: Event) => {
        const b = e.currentTarget as HTMLButtonElement;
        b.disabled = true;
        try {
          const r = await api<{ id: string; status: string }>('POST', `/api/workspaces/${w.id}/${path}`);
          // The list and the page announce the new status as they show it.
          store.update(w.id, { status: r.status });
        } catch (err) {
          opts.onError(`${label} ${w.name}: ${messageOf(err)}`);
          b.disabled = false;
        }
      },
    }, label);
  const del = h('button', {
    type: 'button',
    class: 'danger',
    'aria-describedby': opts.describedBy,
    onclick: () => confirmDelete(store, w, opts),
  }, 'Delete');
  const buttons = { Start: act('Start', 'start'), Stop: act('Stop', 'stop'), Restart: act('Restart', 'restart'), Pause: act('Pause', 'pause'), Resume: act('Resume', 'resume') };
  return {
    el: h('div', { class: 'actions' }, ...Object.values(buttons), del),
    /** Enables what the new status allows, in place (a focused button keeps its focus). */
    update(status: string) {
      for (const [label, b] of Object.entries(buttons)) b.disabled = !ENABLED[label as keyof typeof ENABLED].includes(status);
    },
  };
}

function confirmDelete(store: Store, w: Workspace, opts: { onError: (msg: string) => void; onDeleted?: () => void }) {
  const title = h('h2', { id: 'delete-title' }, `Delete ${w.name}?`);
  const volume = h('input', { type: 'checkbox', id: 'delete-volume' });
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'delete-title', class: 'confirm' },
    h(
      'form',
      { method: 'dialog' },
      title,
      h('p', {}, w.type === 'temporary' ? 'Its container and volume are removed.' : 'Its container is removed; its volume is kept unless you tick the box.'),
      w.type === 'temporary' ? null : h('p', {}, volume, ' ', h('label', { for: 'delete-volume' }, 'Also delete its volume')),
      h('div', { class: 'actions' }, h('button', { value: 'cancel', autofocus: true }, 'Cancel'), h('button', { value: 'delete', class: 'danger' }, 'Delete')),
    ),
  );
  const opener = document.activeElement as HTMLElement | null;
  dialog.addEventListener('close', async () => {
    dialog.remove();
    if (dialog.returnValue !== 'delete') return opener?.focus();
    try {
      await api('DELETE', `/api/workspaces/${w.id}${volume.checked ? '?volumes=true' : ''}`);
      store.remove(w.id);
      announce(`${w.name} deleted`);
      opts.onDeleted?.();
    } catch (err) {
      opts.onError(`Delete ${w.name}: ${messageOf(err)}`);
    }
  });
  document.body.append(dialog);
  dialog.showModal();
}

/** The status as text (screen readers and tests read it), with a class for its colour. */
export const statusBadge = (w: Workspace) => h('span', { class: `status s-${w.status}` }, w.status);
