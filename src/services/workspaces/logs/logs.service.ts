// Workspace logs: a snapshot of the last lines (running or stopped workspaces alike) and the live
// follow, which joins the workspace's shared engine stream (logs.hub.ts) and yields its lines as
// events. No HTTP here: the routes hand the events to the platform's SSE adapter.
import { toEnvelope } from '../../../platform/errors';
import { WorkspaceErrors } from '../workspaces.errors';
import { createInbox } from '../../../platform/inbox';
import type { SseEvent, SseItem } from '../../../platform/http/sse';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, runState, type Engine } from '../engine/engine';
import type { EndReason, LogHub } from './logs.hub';
import { FOLLOWER_BACKLOG_MAX, FOLLOWER_DROP_EVENT, LOG_TAIL_DEFAULT, type LogEntry } from './logs.model';
import { toEntry, type ParsedLine } from './logs.parse';
import { readTail } from './logs.read';
import { engineFailure, type Access } from '../access';
import type { Quotas } from '../quotas';

export interface LogsRequest {
  tail?: number;
  service?: string;
}

/** The last event of a follow whose engine stream ended for good. */
function endEvent(reason: EndReason): SseEvent {
  // An engine stream that broke for no lifecycle reason is a failure, not an ordinary end.
  if (reason === 'error') return { event: 'error', data: toEnvelope(WorkspaceErrors.ENGINE_ERROR('the engine log stream ended unexpectedly')) };
  return { event: 'end', data: { reason } };
}

export function createLogsService(deps: { engine: Engine; hub: LogHub; access: Pick<Access, 'getOwned' | 'engineReady'>; quotas: Pick<Quotas, 'holdingStream'> }) {
  const { engine, hub } = deps;

  /** The tail read (logs.read.ts), its engine failures as the service's errors. */
  const tailOf = (containerId: string | null, tail: number, service?: string) =>
    readTail(engine, containerId, tail, service).catch((e) => {
      throw engineFailure(e);
    });

  /** The tail, then live lines until the engine stream ends for good or `signal` aborts. */
  async function* followLines(workspaceId: string, containerId: string | null, q: LogsRequest, signal: AbortSignal): AsyncGenerator<SseItem> {
    const tail = q.tail ?? LOG_TAIL_DEFAULT;
    try {
      // An open shared stream already proves the container runs: joining it costs no engine call.
      const running = !containerId ? null : hub.isLive(containerId) || (await engine.inspect(containerId).then(runState).catch(() => false));
      if (!containerId || running !== true) {
        for await (const p of (await tailOf(containerId, tail, q.service)).entries) yield { data: toEntry(p) };
        yield { event: 'end', data: { reason: containerId && running === null ? 'deleted' : 'not-running' } };
        return;
      }
      // Join the live stream first and hold its lines, so nothing written while the tail is read is
      // lost; then yield the tail and the held lines newer than it. What is held counts as unread, so
      // the stream waits while the tail is sent; should more than FOLLOWER_BACKLOG_MAX bytes come
      // anyway, only the newest are held, and if older ones were needed the follower is told, as a
      // slow reader is. Live lines wait in the inbox until the client takes them (the SSE adapter
      // reads events as the client reads), which is the backlog the hub paces the stream by.
      const inbox = createInbox<SseItem>(signal);
      let held: { line: ParsedLine; bytes: number }[] | null = [];
      let heldFrom = 0;
      let heldBytes = 0;
      let dropped = false;
      const lost = { stdout: '', stderr: '' };
      const member = await hub.join(workspaceId, containerId, {
        service: q.service,
        get backlog() {
          return held ? heldBytes : inbox.bytes;
        },
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
          // Dropped: what waits in the inbox is not sent, the drop event comes next.
          if (reason === 'slow-reader') dropped = true;
          else inbox.push(endEvent(reason));
          inbox.end();
        },
      });
      try {
        // Keys are ordered within one engine stream: compare each held entry with its stream's last.
        const last = { stdout: '', stderr: '' };
        for await (const p of (await tailOf(containerId, tail, q.service)).entries) {
          last[p.stream] = p.key;
          yield { data: toEntry(p) };
          member.taken();
          if (dropped) break;
        }
        const pending = held.slice(heldFrom);
        held = null;
        if (dropped || lost.stdout > last.stdout || lost.stderr > last.stderr) {
          yield FOLLOWER_DROP_EVENT;
          return;
        }
        for (const { line } of pending) if (line.key > last[line.stream]) yield { data: toEntry(line) };
        member.taken();
        for await (const item of inbox) {
          if (dropped) break;
          yield item;
          member.taken();
        }
        if (dropped) yield FOLLOWER_DROP_EVENT;
      } finally {
        member.leave();
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
    /**
     * The last entries: an array when they are small, else an iterable read from the engine as it is
     * taken (a 100 MB line is never held; an engine failure midway ends the iteration with an error).
     */
    async snapshot(actor: Actor, id: string, q: LogsRequest): Promise<LogEntry[] | AsyncIterable<LogEntry>> {
      const ws = deps.access.engineReady(await deps.access.getOwned(actor, id));
      const r = await tailOf(ws.containerId, q.tail ?? LOG_TAIL_DEFAULT, q.service);
      if (r.held) return r.held.map(toEntry);
      return (async function* () {
        for await (const p of r.entries) yield toEntry(p);
      })();
    },

    /**
     * Checks access now (so a 404 is an ordinary error response), then yields, once read: the tail,
     * live lines (frames the hub encoded once for every follower), then one `end` or `error` event.
     * Ends without a last event when `signal` aborts (client gone, shutdown, dropped by the adapter).
     * Holds one of the actor's stream slots until then (429 first when none is left).
     */
    follow(actor: Actor, id: string, q: LogsRequest, signal: AbortSignal): Promise<AsyncIterable<SseItem>> {
      return deps.quotas.holdingStream(actor, signal, async () => {
        const ws = deps.access.engineReady(await deps.access.getOwned(actor, id));
        return followLines(ws.id, ws.containerId, q, signal);
      });
    },

    stats() {
      return { engineStreams: engine.openLogStreams, ...hub.stats() };
    },
  };
}

export type LogsService = ReturnType<typeof createLogsService>;
