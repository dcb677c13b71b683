// Workspace logs: a snapshot of the last lines (running or stopped workspaces alike) and the live
// follow, which joins the workspace's shared engine stream (logs.hub.ts). No HTTP here: the routes
// hand a follow plan an SSE sink.
import { AppError, toEnvelope } from '../../../platform/errors';
import type { SseSink } from '../../../platform/http/sse';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { LogsExecEngine } from '../engine/docker';
import type { LogHub } from './logs.hub';
import { FOLLOWER_BACKLOG_MAX, LOG_TAIL_DEFAULT, type LogEntry } from './logs.model';
import { parseEngineLine, toEntry, type ParsedLine } from './logs.parse';
import { engineFailure } from '../lifecycle/lifecycle.service';

/** What logs and exec need of the lifecycle: the workspace if the actor may see it, else WORKSPACE_NOT_FOUND. */
export interface OwnedWorkspaces {
  getOwned(actor: Actor, id: string): Promise<{ id: string; containerId: string | null; status: string }> | { id: string; containerId: string | null; status: string };
}

export interface LogsRequest {
  tail?: number;
  service?: string;
}

/** Tail sizes tried, as multiples of the wanted count, before reading the whole log for a service filter. */
const FILTER_WIDENING = [4, 32];
const LONG_LINE_PIECES = 16;

export function createLogsService(deps: { engine: LogsExecEngine; hub: LogHub; workspaces: OwnedWorkspaces }) {
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
        if ((e as { statusCode?: number }).statusCode === 404) return { lines: [], complete: true };
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

  return {
    async snapshot(actor: Actor, id: string, q: LogsRequest): Promise<LogEntry[]> {
      const ws = await deps.workspaces.getOwned(actor, id);
      return (await readTail(ws.containerId, q.tail ?? LOG_TAIL_DEFAULT, q.service)).map(toEntry);
    },

    /**
     * Checks access now (so a 404 is an ordinary error response) and returns what streams once the
     * SSE response is open: the tail, then live lines, then a final `end` or `dropped` event.
     */
    async follow(actor: Actor, id: string, q: LogsRequest): Promise<(sink: SseSink) => Promise<() => void>> {
      const ws = await deps.workspaces.getOwned(actor, id);
      const tail = q.tail ?? LOG_TAIL_DEFAULT;
      return async (sink) => {
        try {
          return await stream(sink);
        } catch (e) {
          // Headers are sent: the failure becomes the stream's last event.
          sink.send(toEnvelope(engineFailure(e)), 'error');
          sink.close();
          return () => {};
        }
      };
      async function stream(sink: SseSink): Promise<() => void> {
        const containerId = ws.containerId;
        // An open shared stream already proves the container runs: joining it costs no engine call.
        const running = !containerId ? null : hub.isLive(containerId) || (await engine.containerRunning(containerId).catch(() => false));
        if (!containerId || running !== true) {
          for (const p of await readTail(containerId, tail, q.service)) sink.send(toEntry(p));
          sink.send({ reason: containerId && running === null ? 'deleted' : 'not-running' }, 'end');
          sink.close();
          return () => {};
        }
        // Join the live stream first and hold its lines, so nothing written meanwhile is lost;
        // then send the tail and the held lines newer than it.
        let held: ParsedLine[] | null = [];
        const leave = await hub.join(ws.id, containerId, {
          service: q.service,
          deliver(line, frame) {
            if (held) return void held.push(line);
            if (sink.backlog > FOLLOWER_BACKLOG_MAX) {
              sink.send({ reason: 'slow-reader', message: `the client left more than ${FOLLOWER_BACKLOG_MAX} bytes unread; reconnect to resume` }, 'dropped');
              return sink.close();
            }
            sink.sendEncoded(frame);
          },
          end(reason) {
            // An engine stream that broke for no lifecycle reason is a failure, not an ordinary end.
            if (reason === 'error') sink.send(toEnvelope(new AppError('ENGINE_ERROR', 502, 'the engine log stream ended unexpectedly')), 'error');
            else sink.send({ reason }, 'end');
            sink.close();
          },
        });
        try {
          const snap = await readTail(containerId, tail, q.service);
          for (const p of snap) sink.send(toEntry(p));
          const last = snap.at(-1)?.ts ?? '';
          for (const p of held) if (p.ts > last) sink.send(toEntry(p));
        } catch (e) {
          leave();
          throw e;
        } finally {
          held = null;
        }
        return leave;
      }
    },

    stats() {
      return { engineStreams: engine.openLogStreams, ...hub.stats() };
    },
  };
}

export type LogsService = ReturnType<typeof createLogsService>;
