/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// What the dashboard knows about the actor's workspaces, kept current by ONE event stream
// (GET /api/events): no polling per row. On the first `ready` (and after a `reset`, when Keel no
// longer holds the last id seen) the list is fetched again; events that arrive while it loads are
// applied again on top of it, so the newest status wins. A cut stream reconnects with
// Last-Event-ID and gets what it missed.
import type { WorkspaceData as ApiWorkspace, WorkspaceStreamEvent } from '../../../../../clients/typescript/src';
import { api, ApiError, readStream, type StreamEvent } from './api';

/** A row: the API's workspace, of which a row made from an event alone has only what the event carries. */
export type Workspace = Pick<ApiWorkspace, 'id' | 'name'> & Partial<Omit<ApiWorkspace, 'id' | 'name' | 'status' | 'reason'>> & { status: string; reason?: string };

/** The data of an `event: workspace` of GET /api/events. */
type WorkspaceEvent = Extract<WorkspaceStreamEvent, { event: 'workspace' }>['data'];

export type Connection = 'connecting' | 'live' | 'reconnecting';

export function createStore() {
  const items = new Map<string, Workspace>();
  const listeners = new Set<() => void>();
  const connListeners = new Set<(c: Connection) => void>();
  let loaded = false;
  let pending: WorkspaceEvent[] | null = null;
  let lastId: string | undefined;
  let stop = new AbortController();
  let connection: Connection = 'connecting';

  const emit = () => listeners.forEach((l) => l());
  const setConnection = (c: Connection) => {
    connection = c;
    connListeners.forEach((l) => l(c));
  };

  function apply(e: WorkspaceEvent) {
    const w = e.workspace;
    if (e.event === 'workspace.deleted') {
      items.delete(w.id);
      return;
    }
    const known = items.get(w.id);
    const next: Workspace = { ...known, id: w.id, name: w.name, status: w.status, reason: w.reason };
    items.set(w.id, next);
    // Created elsewhere (the API, another tab): one read for what the event does not carry.
    if (!known && e.event === 'workspace.created') void fill(w.id);
  }

  async function fill(id: string) {
    try {
      const w = await api<Workspace>('GET', `/api/workspaces/${id}`);
      const cur = items.get(id);
      if (cur) items.set(id, { ...w, status: cur.status, reason: cur.reason });
      emit();
    } catch {}
  }

  async function refresh() {
    pending = [];
    try {
      const { workspaces } = await api<{ workspaces: Workspace[] }>('GET', '/api/workspaces', undefined, stop.signal);
      items.clear();
      for (const w of workspaces) items.set(w.id, w);
      for (const e of pending) apply(e);
      loaded = true;
    } finally {
      pending = null;
      emit();
    }
  }

  function onEvent(e: StreamEvent) {
    if (e.id) lastId = e.id;
    if (e.event === 'ready') {
      setConnection('live');
      if (!loaded) void refresh().catch(() => {});
    } else if (e.event === 'reset') {
      loaded = false;
    } else if (e.event === 'workspace') {
      const ev = e.data as WorkspaceEvent;
      pending?.push(ev);
      apply(ev);
      emit();
    }
  }

  async function run(signal: AbortSignal) {
    let delay = 500;
    while (!signal.aborted) {
      try {
        await readStream('/api/events', { signal, lastEventId: lastId, onEvent, onOpen: () => (delay = 500) });
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return;
      }
      if (signal.aborted) return;
      setConnection('reconnecting');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10_000);
    }
  }

  return {
    start() {
      stop = new AbortController();
      setConnection('connecting');
      void run(stop.signal);
    },
    stop() {
      stop.abort();
      items.clear();
      loaded = false;
      lastId = undefined;
    },
    get loaded() {
      return loaded;
    },
    get connection() {
      return connection;
    },
    list: () => [...items.values()].sort((a, b) => (a.createdAt ?? '9').localeCompare(b.createdAt ?? '9') || a.name.localeCompare(b.name)),
    get: (id: string) => items.get(id),
    /** What an action's answer says (the in-progress status), until the stream says more. */
    update(id: string, patch: Partial<Workspace>) {
      const cur = items.get(id);
      if (cur) items.set(id, { ...cur, ...patch });
      else if (patch.name && patch.status) items.set(id, { id, ...patch } as Workspace);
      emit();
    },
    remove(id: string) {
      items.delete(id);
      emit();
    },
    subscribe(l: () => void) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    onConnection(l: (c: Connection) => void) {
      connListeners.add(l);
      return () => connListeners.delete(l);
    },
  };
}

export type Store = ReturnType<typeof createStore>;
