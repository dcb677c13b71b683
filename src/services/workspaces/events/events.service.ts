// The actor's workspace events as one stream: every `evt.workspace.*` on the bus, kept in a short
// ring so a client that reconnects with Last-Event-ID gets what it missed, then followed live.
// Ids are numbers that grow across restarts (the boot's clock in ms, times 1000, plus a counter), so
// an id from before a restart, or one the ring has forgotten, is recognized and answered with
// `reset` (refetch the list) instead of being confused with a newer event.
import type { Bus } from '../../../platform/bus/bus';
import type { WorkspaceEventPayload } from '../../../platform/bus/subjects';
import { canAccess, type Actor } from '../../../platform/auth/workspace-token';
import type { SseEvent } from '../../../platform/http/sse';
import { createInbox } from '../../../platform/inbox';
import type { Clock } from '../../../platform/runtime';
import type { Quotas } from '../quotas';

/** Events kept for resumption: minutes of a busy Keel, enough to bridge a reconnect. */
export const EVENT_RING_SIZE = 1000;

interface Entry {
  id: number;
  payload: WorkspaceEventPayload;
}

export interface WorkspaceEvents {
  /**
   * The events `actor` may see (admins: all): after `lastEventId` when it can be resumed from, else a
   * `reset`; then `ready` (the stream is live from here) and each new event as it is published.
   * Holds one of the actor's stream slots until `signal` aborts (429 at once when none is left).
   */
  follow(actor: Actor, lastEventId: string | undefined, signal: AbortSignal): AsyncGenerator<SseEvent>;
  /** Open followers, for tests and operators. */
  readonly followers: number;
  /** Keeps every `evt.workspace.*` of `bus` from now on; returns the unsubscribe. */
  listen(bus: Bus): () => void;
}

export function createWorkspaceEvents(deps: { clock: Clock; quotas: Pick<Quotas, 'hold'>; ringSize?: number }): WorkspaceEvents {
  const size = deps.ringSize ?? EVENT_RING_SIZE;
  const ring: Entry[] = [];
  let next = Math.floor(deps.clock.now()) * 1000;
  const listeners = new Set<(e: Entry) => void>();

  function keep(payload: WorkspaceEventPayload) {
    const entry: Entry = { id: next++, payload };
    ring.push(entry);
    if (ring.length > size) ring.shift();
    for (const l of listeners) l(entry);
  }

  const frame = (e: Entry): SseEvent => ({ id: e.id, event: 'workspace', data: e.payload });

  /** The entries after `id`, or null when the ring cannot tell (malformed, too old, another boot). */
  function after(id: string): Entry[] | null {
    if (!/^\d{1,16}$/.test(id)) return null;
    const n = Number(id);
    const oldest = ring[0]?.id ?? next;
    if (n < oldest - 1 || n >= next) return null;
    return ring.filter((e) => e.id > n);
  }

  async function* stream(actor: Actor, lastEventId: string | undefined, signal: AbortSignal): AsyncGenerator<SseEvent> {
    const inbox = createInbox<SseEvent>(signal);
    const visible = (e: Entry) => canAccess(actor, e.payload.owner);
    // Replay and subscribe in one synchronous step: no event can fall between the two.
    if (lastEventId !== undefined) {
      const missed = after(lastEventId);
      if (missed === null) inbox.push({ event: 'reset', data: { reason: 'unknown-event-id' } });
      else for (const e of missed) if (visible(e)) inbox.push(frame(e));
    }
    inbox.push({ id: next - 1, event: 'ready', data: {} });
    const listener = (e: Entry) => {
      if (visible(e)) inbox.push(frame(e));
    };
    listeners.add(listener);
    try {
      yield* inbox;
    } finally {
      listeners.delete(listener);
    }
  }

  return {
    follow(actor, lastEventId, signal) {
      deps.quotas.hold(actor, 'streams', signal);
      return stream(actor, lastEventId, signal);
    },
    get followers() {
      return listeners.size;
    },
    listen: (bus) => bus.subscribe('evt.workspace.*', (payload) => keep(payload as WorkspaceEventPayload)),
  };
}
