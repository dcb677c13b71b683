// Workspace logs: a snapshot of the last lines (running or stopped workspaces alike) and the live
// follow, which joins the workspace's shared engine stream (logs.hub.ts) and yields its lines as
// events. No HTTP here: the routes hand the events to the platform's SSE adapter.
import { AppError, toEnvelope } from '../../../platform/errors';
import '../workspaces.errors';
import { createInbox } from '../../../platform/inbox';
import type { SseEvent, SseItem } from '../../../platform/http/sse';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, runState, type Engine } from '../engine/engine';
import type { EndReason, LogHub } from './logs.hub';
import { LOG_TAIL_DEFAULT, type LogEntry } from './logs.model';
import { parseEngineLine, toEntry, type ParsedLine } from './logs.parse';
import { engineFailure, type Access } from '../access';

export interface LogsRequest {
  tail?: number;
  service?: string;
}

/** The last event of a follow whose engine stream ended for good. */
function endEvent(reason: EndReason): SseEvent {
  // An engine stream that broke for no lifecycle reason is a failure, not an ordinary end.
  if (reason === 'error') return { event: 'error', data: toEnvelope(new AppError('ENGINE_ERROR', 'the engine log stream ended unexpectedly')) };
  return { event: 'end', data: { reason } };
}

/** Tail sizes tried, as multiples of the wanted count, before reading the whole log for a service filter. */
const FILTER_WIDENING = [4, 32];
const LONG_LINE_PIECES = 16;

export function createLogsService(deps: { engine: Engine; hub: LogHub; access: Pick<Access, 'getOwned'> }) {
  const { engine, hub } = deps;

  /** The last `tail` lines (of `service` when given), oldest first. A container that is gone has none. */
  async function readTail(containerId: string | null, tail: number, service?: string): Promise<ParsedLine[]> {
    if (!containerId || tail <= 0) return [];
    const read = async (n: number | 'all') => {
      const out: ParsedLine[] = [];
      let seen = 0;
      try {
        await engine.logStream(containerId, { follow: false, tail: n }, (s, l) => {
          seen++;
          const p = parseEngineLine(s, l);
          if (service === undefined || p.service === service) out.push(p);
        });
      } catch (e) {
        if (e instanceof EngineError && e.kind === 'not-found') return { lines: [], complete: true };
        throw engineFailure(e);
      }
      // Fewer lines than asked for means the log holds no more.
      return { lines: out, complete: n === 'all' || seen < n };
    };
    // The engine counts a long line's 16 KiB pieces as lines of their own: read a few more so the
    // oldest line returned is whole (lines up to 256 KiB).
    if (service === undefined) return (await read(tail + LONG_LINE_PIECES)).lines.slice(-tail);
    // The engine's tail counts lines of every service: widen until enough lines of this one are found.
    for (const k of FILTER_WIDENING) {
      const r = await read(tail * k);
      if (r.lines.length >= tail || r.complete) return r.lines.slice(-tail);
    }
    return (await read('all')).lines.slice(-tail);
  }

  /** The tail, then live lines until the engine stream ends for good or `signal` aborts. */
  async function* followLines(workspaceId: string, containerId: string | null, q: LogsRequest, signal: AbortSignal): AsyncGenerator<SseItem> {
    const tail = q.tail ?? LOG_TAIL_DEFAULT;
    try {
      // An open shared stream already proves the container runs: joining it costs no engine call.
      const running = !containerId ? null : hub.isLive(containerId) || (await engine.inspect(containerId).then(runState).catch(() => false));
      if (!containerId || running !== true) {
        for (const p of await readTail(containerId, tail, q.service)) yield { data: toEntry(p) };
        yield { event: 'end', data: { reason: containerId && running === null ? 'deleted' : 'not-running' } };
        return;
      }
      // Join the live stream first and hold its lines, so nothing written while the tail is read is
      // lost; then yield the tail and the held lines newer than it.
      const inbox = createInbox<SseItem>(signal);
      let held: ParsedLine[] | null = [];
      const leave = await hub.join(workspaceId, containerId, {
        service: q.service,
        deliver(line, frame) {
          if (held) held.push(line);
          else inbox.push(frame, frame.byteLength);
        },
        end(reason) {
          inbox.push(endEvent(reason));
          inbox.end();
        },
      });
      try {
        const snap = await readTail(containerId, tail, q.service);
        const pending = held;
        held = null;
        for (const p of snap) yield { data: toEntry(p) };
        const last = snap.at(-1)?.ts ?? '';
        for (const p of pending) if (p.ts > last) yield { data: toEntry(p) };
        yield* inbox;
      } finally {
        leave();
      }
    } catch (e) {
      // Headers are sent: the failure becomes the stream's last event. A container removed or
      // stopped while the stream opened (a delete racing the follow) is an ordinary end, not a failure.
      const now = e instanceof EngineError && e.kind === 'not-found' ? null : containerId ? await engine.inspect(containerId).then(runState).catch(() => true) : null;
      if (now === true) yield { event: 'error', data: toEnvelope(engineFailure(e)) };
      else yield endEvent(now === null ? 'deleted' : 'stopped');
    }
  }

  return {
    async snapshot(actor: Actor, id: string, q: LogsRequest): Promise<LogEntry[]> {
      const ws = deps.access.getOwned(actor, id);
      return (await readTail(ws.containerId, q.tail ?? LOG_TAIL_DEFAULT, q.service)).map(toEntry);
    },

    /**
     * Checks access now (so a 404 is an ordinary error response), then yields, once read: the tail,
     * live lines (frames the hub encoded once for every follower), then one `end` or `error` event.
     * Ends without a last event when `signal` aborts (client gone, shutdown, dropped by the adapter).
     */
    async follow(actor: Actor, id: string, q: LogsRequest, signal: AbortSignal): Promise<AsyncIterable<SseItem>> {
      const ws = deps.access.getOwned(actor, id);
      return followLines(ws.id, ws.containerId, q, signal);
    },

    stats() {
      return { engineStreams: engine.openLogStreams, ...hub.stats() };
    },
  };
}

export type LogsService = ReturnType<typeof createLogsService>;
