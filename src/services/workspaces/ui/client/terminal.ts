/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The Terminal view of a workspace's page: xterm.js (bundled from npm, served by Keel) on a terminal
// of the workspace API. `Open terminal` opens one; its id is kept in this tab, so a reload asks a new
// ticket for the same terminal and first shows what it wrote meanwhile (the server's replay).
// xterm.js (~270 kB) is a chunk of its own, loaded when a terminal is first opened, so the page's
// first script stays small; its stylesheet (a few kB) goes with the dashboard's. The terminal fills its
// pane (xterm's fit add-on) and follows the pane's size: each change is sent as a resize, so the shell's
// lines wrap where the screen does.
import type { Terminal } from '@xterm/xterm';
import type { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import { api, messageOf } from './api';
import { h } from '../../../../platform/browser/dom';
import type { PanelContext } from './workspace';

interface Ticket {
  id: string;
  ticket: string;
  expiresAt: string;
}

const COLS = 100;
const ROWS = 24;
const key = (workspaceId: string) => `keel.terminal.${workspaceId}`;

export function terminalPanel(ctx: PanelContext): HTMLElement {
  const screen = h('div', { class: 'terminal', 'aria-label': 'Terminal screen' });
  const error = h('p', { role: 'alert', class: 'error' });
  const openButton = h('button', { type: 'button' }, 'Open terminal');
  const section = h('section', { 'aria-labelledby': 'term-h' }, h('h2', { id: 'term-h' }, 'Terminal'), openButton, error, screen);
  let term: Terminal | undefined;
  let fit: FitAddon | undefined;
  let socket: WebSocket | undefined;

  /** xterm.js measures its cells when opened: the page must be in the document first. */
  const shown = () => new Promise<void>((resolve) => {
    const check = () => (screen.isConnected || ctx.signal.aborted ? resolve() : requestAnimationFrame(check));
    check();
  });

  async function attach(t: Ticket) {
    await shown();
    // The page was left (or rebuilt) while the ticket was on its way: the ticket stays unused.
    if (ctx.signal.aborted) return;
    sessionStorage.setItem(key(ctx.id), t.id);
    socket?.close();
    if (!term) {
      const [xterm, { FitAddon }] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit')]);
      term ??= new xterm.Terminal({ cols: COLS, rows: ROWS, convertEol: false });
      fit = new FitAddon();
      term.loadAddon(fit);
    }
    if (!term.element) {
      term.open(screen);
      const enc = new TextEncoder();
      term.onData((d) => socket?.readyState === WebSocket.OPEN && socket.send(enc.encode(d)));
      term.onResize(({ cols, rows }) => socket?.readyState === WebSocket.OPEN && socket.send(JSON.stringify({ type: 'resize', cols, rows })));
      fit!.fit();
      // The pane follows the window (and the page's layout): the terminal follows the pane, once per frame at most.
      let pending = 0;
      const observer = new ResizeObserver(() => {
        cancelAnimationFrame(pending);
        pending = requestAnimationFrame(() => fit?.fit());
      });
      observer.observe(screen);
      ctx.signal.addEventListener('abort', () => observer.disconnect());
    }
    const url = `${location.origin.replace(/^http/, 'ws')}/api/workspaces/${ctx.id}/terminals/${t.id}?ticket=${encodeURIComponent(t.ticket)}`;
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => ws.send(JSON.stringify({ type: 'resize', cols: term!.cols, rows: term!.rows }));
    ws.onmessage = (e) => term!.write(typeof e.data === 'string' ? e.data : new Uint8Array(e.data as ArrayBuffer));
    ws.onclose = () => {
      if (socket === ws) socket = undefined;
    };
    socket = ws;
    term.focus();
  }

  async function run(f: () => Promise<Ticket>) {
    error.textContent = '';
    try {
      await attach(await f());
    } catch (e) {
      if (!ctx.signal.aborted) error.textContent = messageOf(e);
    }
  }

  openButton.addEventListener('click', () => void run(() => api<Ticket>('POST', `/api/workspaces/${ctx.id}/terminals`, { cols: COLS, rows: ROWS }, ctx.signal)));
  // A terminal this tab opened before a reload: reattach (it may have ended: then nothing to show).
  const kept = sessionStorage.getItem(key(ctx.id));
  if (kept) {
    void api<Ticket>('POST', `/api/workspaces/${ctx.id}/terminals/${kept}/tickets`, undefined, ctx.signal)
      .then(attach)
      .catch((e) => (e as { status?: number }).status === 404 && sessionStorage.removeItem(key(ctx.id)));
  }
  ctx.signal.addEventListener('abort', () => {
    socket?.close();
    term?.dispose();
  });
  return section;
}
