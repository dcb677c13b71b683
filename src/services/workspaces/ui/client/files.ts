/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A workspace page's Files view: browse from /workspace, upload with progress, download, and open a
// text file to edit and save. Bytes go through the files API with the tab's token: a download is
// fetched and handed to the browser as a blob (a plain link could not carry the Authorization header).
import { api, ApiError, authorized, messageOf } from './api';
import { announce, fill, h, uid } from '../../../../platform/browser/dom';
import { request } from '../../../../platform/browser/request';
import type { PanelContext } from './workspace';

interface Entry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
}

/** Files past this open as a download only: the editor is for source and notes, not logs of gigabytes. */
const EDIT_MAX_BYTES = 1024 * 1024;

export function filesPanel(ctx: PanelContext): HTMLElement {
  const filesUrl = (path: string) => `/api/workspaces/${ctx.id}/files?path=${encodeURIComponent(path)}`;
  let cwd = '/workspace';
  const where = h('code', {}, cwd);
  const list = h('ul', { class: 'files', 'aria-label': 'Files' });
  const error = h('p', { role: 'alert', class: 'error' });
  // Visually hidden but focusable: its label is the `Upload` button a person sees.
  const upload = h('input', { id: uid('upload'), type: 'file', multiple: true, class: 'sr-only' });
  const progress = h('progress', { max: '100', value: '0', hidden: true, 'aria-label': 'Upload progress' });
  const editor = h('div', { class: 'editor' });
  const join = (name: string) => (cwd.endsWith('/') ? cwd : cwd + '/') + name;

  async function load(path = cwd) {
    error.textContent = '';
    try {
      const { entries } = await api<{ entries: Entry[] }>('GET', filesUrl(path), undefined, ctx.signal);
      cwd = path;
      where.textContent = cwd;
      const up = cwd !== '/' ? h('li', {}, h('button', { type: 'button', class: 'link', onclick: () => void load(cwd.replace(/\/[^/]+\/?$/, '') || '/') }, '.. (up)')) : null;
      fill(list, up, entries.length ? entries.map(item) : h('li', { class: 'note' }, 'Empty folder.'));
    } catch (e) {
      if (!ctx.signal.aborted) error.textContent = messageOf(e);
    }
  }

  function item(e: Entry): HTMLElement {
    const path = join(e.name);
    if (e.type === 'directory') return h('li', {}, h('button', { type: 'button', class: 'link', onclick: () => void load(path) }, `${e.name}/`));
    const size = h('span', { class: 'note' }, ` ${e.size} bytes `);
    const download = h('button', { type: 'button', 'aria-label': `Download ${e.name}`, onclick: () => void save(path, e.name) }, 'Download');
    const open = h('button', { type: 'button', 'aria-label': `Open ${e.name}`, disabled: e.size > EDIT_MAX_BYTES, onclick: () => void edit(path) }, 'Open');
    return h('li', {}, h('span', {}, e.name), size, open, ' ', download);
  }

  async function save(path: string, name: string) {
    try {
      const res = await request(filesUrl(path), { headers: authorized(), signal: ctx.signal });
      if (!res.ok) throw new ApiError(res.status, 'HTTP_' + res.status, `download answered ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: name, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      error.textContent = messageOf(e);
    }
  }

  async function edit(path: string) {
    try {
      const res = await request(filesUrl(path), { headers: authorized(), signal: ctx.signal });
      if (!res.ok) throw new ApiError(res.status, 'HTTP_' + res.status, `open answered ${res.status}`);
      const text = await res.text();
      const area = h('textarea', { id: uid('edit'), rows: '14', spellcheck: 'false' });
      area.value = text;
      const status = h('span', { role: 'status', class: 'note' });
      const saveButton = h('button', { type: 'button', onclick: async () => {
        saveButton.disabled = true;
        try {
          await fetch(filesUrl(path), { method: 'PUT', headers: authorized(), body: area.value }).then(async (r) => {
            if (!r.ok) throw new ApiError(r.status, 'HTTP_' + r.status, `save answered ${r.status}`);
          });
          status.textContent = 'Saved';
          announce(`${path} saved`);
          void load();
        } catch (e) {
          status.textContent = messageOf(e);
        } finally {
          saveButton.disabled = false;
        }
      } }, 'Save');
      const close = h('button', { type: 'button', onclick: () => fill(editor) }, 'Close');
      fill(editor, h('label', { for: area.id }, `Editing ${path}`), area, h('div', { class: 'row' }, saveButton, close, status));
      area.focus();
    } catch (e) {
      error.textContent = messageOf(e);
    }
  }

  /** XMLHttpRequest, not fetch: only it reports an upload's progress. */
  function put(path: string, file: File): Promise<void> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('PUT', filesUrl(path));
      authorized().forEach((v, k) => xhr.setRequestHeader(k, v));
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) progress.value = Math.round((e.loaded / e.total) * 100);
      };
      xhr.onload = () => (xhr.status < 300 ? resolve() : reject(new ApiError(xhr.status, 'HTTP_' + xhr.status, uploadMessage(xhr))));
      xhr.onerror = () => reject(new Error('the upload was cut off'));
      xhr.send(file);
    });
  }

  upload.addEventListener('change', async () => {
    const files = [...(upload.files ?? [])];
    if (!files.length) return;
    progress.hidden = false;
    try {
      for (const f of files) {
        progress.value = 0;
        await put(join(f.name), f);
        announce(`${f.name} uploaded`);
      }
      await load();
    } catch (e) {
      error.textContent = messageOf(e);
    } finally {
      progress.hidden = true;
      upload.value = '';
    }
  });

  void load();
  return h(
    'section',
    { 'aria-labelledby': 'files-h' },
    h('h2', { id: 'files-h' }, 'Files'),
    h('p', {}, 'Folder: ', where),
    h('div', { class: 'row' }, h('label', { for: upload.id, class: 'button' }, 'Upload'), upload, progress),
    error,
    list,
    editor,
  );
}

function uploadMessage(xhr: XMLHttpRequest): string {
  try {
    return (JSON.parse(xhr.responseText) as { error?: { message?: string } }).error?.message ?? `upload answered ${xhr.status}`;
  } catch {
    return `upload answered ${xhr.status}`;
  }
}
