// Workspace logs: a snapshot of the last lines (running or stopped workspaces alike) and the live
// follow, which joins the workspace's shared engine stream (logs.hub.ts) and yields its lines as
// events. No HTTP here: the routes hand the events to the platform's SSE adapter.
import { toEnvelope } from '../../../platform/errors';
import { WorkspaceErrors } from '../workspaces.errors';
import type { SseEvent, SseItem, SseSplice, SseWriter } from '../../../platform/http/sse';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, runState, type Engine } from '../engine/engine';
import type { EndReason, Follower, LogHub, Membership } from './logs.hub';
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

/**
 * One follower of a workspace's live log, from the hub's side (Follower) and the SSE adapter's
 * (SseSplice). While the tail is read it holds the live lines (at most FOLLOWER_BACKLOG_MAX bytes,
 * the newest kept); then it queues their frames until the adapter attaches it; then each frame goes
 * straight to the client's stream. A class: a thousand followers share its methods, not closures.
 */
class LogFollower implements Follower, SseSplice {
  member!: Membership;
  /** Lines delivered while the tail is read (null once released), from `heldFrom` on. */
  private held: { line: ParsedLine; bytes: number }[] | null = [];
  private heldFrom = 0;
  private heldBytes = 0;
  /** Per engine stream, the key of the newest held line forgotten for want of room. */
  private lost = { stdout: '', stderr: '' };
  /** Frames between the release and the attach. */
  private queued: Uint8Array[] = [];
  private queuedBytes = 0;
  private out: SseWriter | undefined = undefined;
  private detach: (() => void) | undefined = undefined;
  /** Set when the hub ended the follower; `slow-reader` also sets `dropped`. */
  ended: EndReason | undefined = undefined;
  dropped = false;

  constructor(readonly service: string | undefined) {}

  get backlog() {
    if (this.held) return this.heldBytes;
    return this.out ? this.out.unread : this.queuedBytes;
  }

  deliver(line: ParsedLine, frame: Uint8Array) {
    if (this.out) return this.out.write(frame);
    if (!this.held) {
      this.queued.push(frame);
      this.queuedBytes += frame.byteLength;
      return;
    }
    const held = this.held;
    held.push({ line, bytes: frame.byteLength });
    this.heldBytes += frame.byteLength;
    while (this.heldBytes > FOLLOWER_BACKLOG_MAX && held.length - this.heldFrom > 1) {
      const old = held[this.heldFrom++]!;
      this.heldBytes -= old.bytes;
      this.lost[old.line.stream] = old.line.key;
    }
    if (this.heldFrom > 1024 && this.heldFrom * 2 > held.length) {
      this.held = held.slice(this.heldFrom);
      this.heldFrom = 0;
    }
  }

  /** The engine stream ended for good, or the hub dropped this follower. */
  end(reason: EndReason) {
    this.ended = reason;
    // Dropped: the drop event comes next, what is queued is not sent; otherwise the end event, after it.
    if (reason === 'slow-reader') {
      this.dropped = true;
      this.queued = [];
    }
    this.handleEvent();
  }

  /** Stops holding: the lines held while the tail was read, and what was forgotten of them. */
  release() {
    const pending = this.held ? this.held.slice(this.heldFrom) : [];
    this.held = null;
    return { pending, lost: this.lost };
  }

  attach(out: SseWriter): Promise<void> {
    for (const f of this.queued) out.write(f);
    this.queued = [];
    this.queuedBytes = 0;
    if (this.ended || out.signal.aborted) return Promise.resolve();
    this.out = out;
    out.signal.addEventListener('abort', this, { once: true });
    return new Promise<void>((resolve) => (this.detach = resolve));
  }

  /** The client's stream ended (its signal), or the hub ended the follower: the splice is done. */
  handleEvent() {
    this.out?.signal.removeEventListener('abort', this);
    this.out = undefined;
    const d = this.detach;
    this.detach = undefined;
    d?.();
  }

  taken() {
    this.member?.taken();
  }
}

export function createLogsService(deps: { engine: Engine; hub: LogHub; access: Pick<Access, 'getOwned' | 'engineReady'>; quotas: Pick<Quotas, 'holdingStream'> }) {
  const { engine, hub } = deps;

  /** The tail read (logs.read.ts), its engine failures as the service's errors. */
  const tailOf = (containerId: string | null, tail: number, service?: string) =>
    readTail(engine, containerId, tail, service).catch((e) => {
      throw engineFailure(e);
    });

  /** Engine inspects in flight, by container: followers that arrive together share one. */
  const probing = new Map<string, Promise<boolean | null>>();
  /** Whether the container runs (null: it is gone). An open shared stream proves it at no cost. */
  const runs = (containerId: string): boolean | Promise<boolean | null> => {
    if (hub.isLive(containerId)) return true;
    let p = probing.get(containerId);
    if (!p) {
      p = engine.inspect(containerId).then(runState).catch(() => false);
      probing.set(containerId, p);
      void p.then(() => probing.delete(containerId));
    }
    return p;
  };

  /** The tail, then live lines until the engine stream ends for good or the client's stream ends. */
  async function* followLines(workspaceId: string, containerId: string | null, q: LogsRequest): AsyncGenerator<SseItem> {
    const tail = q.tail ?? LOG_TAIL_DEFAULT;
    try {
      const running = !containerId ? null : await runs(containerId);
      if (!containerId || running !== true) {
        for await (const p of (await tailOf(containerId, tail, q.service)).entries) yield { data: toEntry(p) };
        yield { event: 'end', data: { reason: containerId && running === null ? 'deleted' : 'not-running' } };
        return;
      }
      // Join the live stream first and hold its lines, so nothing written while the tail is read is
      // lost; then yield the tail and the held lines newer than it, then the follower itself: a splice
      // the SSE adapter attaches to the client's stream, into which the hub writes each live line's
      // frame (encoded once for all followers) as it comes. What it holds, then what the client has
      // not taken, is the backlog the hub paces the shared engine stream by (logs.hub.ts).
      const follower = new LogFollower(q.service);
      const member = await hub.join(workspaceId, containerId, follower);
      follower.member = member;
      try {
        // Keys are ordered within one engine stream: compare each held entry with its stream's last.
        const last = { stdout: '', stderr: '' };
        for await (const p of (await tailOf(containerId, tail, q.service)).entries) {
          last[p.stream] = p.key;
          yield { data: toEntry(p) };
          member.taken();
          if (follower.dropped) break;
        }
        const { pending, lost } = follower.release();
        if (follower.dropped || lost.stdout > last.stdout || lost.stderr > last.stderr) {
          yield FOLLOWER_DROP_EVENT;
          return;
        }
        for (const { line } of pending) if (line.key > last[line.stream]) yield { data: toEntry(line) };
        member.taken();
        yield follower;
        if (follower.dropped) yield FOLLOWER_DROP_EVENT;
        else if (follower.ended) yield endEvent(follower.ended);
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
     * Ends without a last event when `signal` aborts (client gone, shutdown, dropped by the adapter),
     * which returns the iterator. Holds one of the actor's stream slots until then (429 first when none is left).
     */
    follow(actor: Actor, id: string, q: LogsRequest, signal: AbortSignal): Promise<AsyncIterable<SseItem>> {
      return deps.quotas.holdingStream(actor, signal, async () => {
        const ws = deps.access.engineReady(await deps.access.getOwned(actor, id));
        return followLines(ws.id, ws.containerId, q);
      });
    },

    stats() {
      return { engineStreams: engine.openLogStreams, ...hub.stats() };
    },
  };
}

export type LogsService = ReturnType<typeof createLogsService>;
