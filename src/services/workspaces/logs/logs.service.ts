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
import { FOLLOWER_BACKLOG, FOLLOWER_BACKLOG_MAX, LOG_TAIL_DEFAULT, type LogEntry } from './logs.model';
import { pieceParser, toEntry, type ParsedLine } from './logs.parse';
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

/** Engine messages (16 KiB at most) one entry (64 KiB at most) may span, a cut character included. */
const MESSAGES_PER_ENTRY = 5;

export function createLogsService(deps: { engine: Engine; hub: LogHub; access: Pick<Access, 'getOwned' | 'engineReady'> }) {
  const { engine, hub } = deps;

  /** The last `tail` entries (of `service` when given), oldest first. A container that is gone has none. */
  async function readTail(containerId: string | null, tail: number, service?: string): Promise<ParsedLine[]> {
    if (!containerId || tail <= 0) return [];
    const read = async (n: number | 'all') => {
      // Only the last `tail` entries are kept, whatever the read spans: memory is tail entries at most.
      let kept: { line: ParsedLine; first: boolean }[] = [];
      const parse = pieceParser();
      const lines = { stdout: 0, stderr: 0 };
      let messages = 0;
      try {
        const h = await engine.logStream(containerId, { follow: false, tail: n }, (s, piece) => {
          if (piece.index === 0) lines[s]++;
          const p = parse(s, piece);
          if (service !== undefined && p.service !== service) return;
          kept.push({ line: p, first: lines[s] <= 1 });
          if (kept.length >= 2 * tail + 1024) kept = kept.slice(-tail);
        });
        await h.done;
        messages = h.messages;
      } catch (e) {
        if (e instanceof EngineError && e.kind === 'not-found') return { lines: [], complete: true };
        throw engineFailure(e);
      }
      // Fewer messages than asked for means the log holds no more. Otherwise each stream's first line
      // may have begun before the read: its entries are dropped rather than shown cut differently.
      const complete = n === 'all' || messages < n;
      return { lines: (complete ? kept : kept.filter((k) => !k.first)).slice(-tail).map((k) => k.line), complete };
    };
    // The engine's tail counts its messages (a long line is one per 16 KiB, an entry up to 5 of them),
    // and lines of every service: widen until enough entries are found, then read the whole log.
    const first = tail * MESSAGES_PER_ENTRY + 16;
    for (const n of [first, first * 8, first * 64]) {
      const r = await read(n);
      if (r.lines.length >= tail || r.complete) return r.lines;
    }
    return (await read('all')).lines;
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
      // lost; then yield the tail and the held lines newer than it. Only the newest FOLLOWER_BACKLOG_MAX
      // bytes are held (a flood must not grow memory while the tail is read); if older held lines
      // were needed after all, the follower is as far behind as a slow reader, and told so.
      const inbox = createInbox<SseItem>(signal);
      let held: { line: ParsedLine; bytes: number }[] | null = [];
      let heldFrom = 0;
      let heldBytes = 0;
      const lost = { stdout: '', stderr: '' };
      const leave = await hub.join(workspaceId, containerId, {
        service: q.service,
        deliver(line, frame) {
          if (!held) return inbox.push(frame, frame.byteLength);
          held.push({ line, bytes: frame.byteLength });
          heldBytes += frame.byteLength;
          while (heldBytes > FOLLOWER_BACKLOG_MAX && held.length - heldFrom > 1) {
            const old = held[heldFrom++]!;
            heldBytes -= old.bytes;
            lost[old.line.stream] = old.line.key;
          }
          if (heldFrom > 1024 && heldFrom * 2 > held.length) {
            held = held.slice(heldFrom);
            heldFrom = 0;
          }
        },
        end(reason) {
          inbox.push(endEvent(reason));
          inbox.end();
        },
      });
      try {
        const snap = await readTail(containerId, tail, q.service);
        const pending = held.slice(heldFrom);
        held = null;
        for (const p of snap) yield { data: toEntry(p) };
        // Keys are ordered within one engine stream: compare each held entry with its stream's last.
        const last = { stdout: '', stderr: '' };
        for (const p of snap) last[p.stream] = p.key;
        if (lost.stdout > last.stdout || lost.stderr > last.stderr) {
          yield FOLLOWER_BACKLOG.dropEvent;
          return;
        }
        for (const { line } of pending) if (line.key > last[line.stream]) yield { data: toEntry(line) };
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
      const ws = deps.access.engineReady(await deps.access.getOwned(actor, id));
      return (await readTail(ws.containerId, q.tail ?? LOG_TAIL_DEFAULT, q.service)).map(toEntry);
    },

    /**
     * Checks access now (so a 404 is an ordinary error response), then yields, once read: the tail,
     * live lines (frames the hub encoded once for every follower), then one `end` or `error` event.
     * Ends without a last event when `signal` aborts (client gone, shutdown, dropped by the adapter).
     */
    async follow(actor: Actor, id: string, q: LogsRequest, signal: AbortSignal): Promise<AsyncIterable<SseItem>> {
      const ws = deps.access.engineReady(await deps.access.getOwned(actor, id));
      return followLines(ws.id, ws.containerId, q, signal);
    },

    stats() {
      return { engineStreams: engine.openLogStreams, ...hub.stats() };
    },
  };
}

export type LogsService = ReturnType<typeof createLogsService>;
