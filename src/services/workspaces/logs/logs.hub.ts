// Fan-out of live logs: every follower of one workspace shares one engine log stream. The stream
// opens with the first follower and closes as soon as the last one leaves; each entry is parsed and
// serialised once, then handed to every follower whose service filter matches. When the container
// stops, the workspace's events on the bus (evt.workspace.*) say what comes next: a start or restart
// re-attaches, a stop, failure or delete ends the followers. Nothing is polled.
// The engine stream is read only as fast as its followers take: while one has more than
// FOLLOWER_AHEAD_MAX bytes unread, the stream pauses (the engine holds the log, not Keel); one that
// then takes nothing for FOLLOWER_STALL_MS is dropped, so a stuck client holds the others back that
// long at most.
import { encodeEvent } from '../../../platform/http/sse';
import type { Bus } from '../../../platform/bus/bus';
import type { WorkspaceEventPayload } from '../../../platform/bus/subjects';
import type { Clock, Logger } from '../../../platform/runtime';
import { runState, type Engine, type LogStreamHandle, type StdStream } from '../engine/engine';
import { pieceParser, toEntry, type ParsedLine } from './logs.parse';
import { FOLLOWER_AHEAD_MAX, FOLLOWER_STALL_MS, LOG_CHURN_COLLECT_CHARS } from './logs.model';
import { createChurnGuard } from '../../../platform/churn';

export type EndReason = 'stopped' | 'deleted' | 'error' | 'slow-reader';

export interface Follower {
  /** Only lines of this service; undefined = all. */
  service?: string;
  /** A matching line, with its SSE frame already encoded. */
  deliver(line: ParsedLine, frame: Uint8Array): void;
  /** The engine stream ended for good, or the follower was dropped (`slow-reader`); it closes itself. */
  end(reason: EndReason): void;
  /** Bytes delivered that its client has not taken yet. */
  readonly backlog: number;
}

/** What join gives a follower: `taken` after its client took something (the stream may go on), `leave`. */
export interface Membership {
  taken(): void;
  leave(): void;
}

/** The workspace events that decide what a stopped log stream does next. */
type LifecycleEvent = 'started' | 'restarted' | 'stopped' | 'failed' | 'deleted';

interface Channel {
  workspaceId: string;
  containerId: string;
  followers: Set<Follower>;
  /** When each follower last took something, or when the stream last paused (clock ms): one behind that long is dropped. */
  tookAt: Map<Follower, number>;
  handle?: LogStreamHandle;
  /** True while the engine stream is being opened (the container ran when it was asked for). */
  attaching: boolean;
  /** The engine stream waits for a follower behind; `stall` checks, meanwhile, who is stuck. */
  paused: boolean;
  stall?: ReturnType<typeof setTimeout>;
  /** Resolves once the engine stream is attached: later lines reach every follower. */
  ready: Promise<void>;
  /** The last entry sent, per engine stream: key and message. Anything not after it was sent. */
  last: Record<StdStream, { key: string; message: string }>;
  /** Unix seconds when the channel opened: where a re-attach starts when no line came yet. */
  openedAt: number;
  /** The workspace's latest lifecycle event seen while the channel is open, and how many came. */
  event?: LifecycleEvent;
  events: number;
  /** Set while the engine stream has ended and the channel waits for the workspace's next event. */
  waiting?: { timer: ReturnType<typeof setTimeout> };
  closed: boolean;
}

/** How long followers wait, after the container stopped, for the event that says what happened. */
const EVENT_WAIT_MS = 60_000;
const RELEVANT = new Set<string>(['started', 'restarted', 'stopped', 'failed', 'deleted']);

export function createLogHub(deps: { engine: Engine; log: Logger; clock: Clock }) {
  const channels = new Map<string, Channel>();
  /** workspace id -> its channel, for the bus events (which name workspaces, not containers). */
  const byWorkspace = new Map<string, Channel>();
  /** A long line leaves several times its size in garbage (text, JSON, frames): collected as it goes. */
  const churn = createChurnGuard(LOG_CHURN_COLLECT_CHARS);

  const dispatch = (ch: Channel, parse: ReturnType<typeof pieceParser>, stream: StdStream, piece: Parameters<ReturnType<typeof pieceParser>>[1]) => {
    const line = parse(stream, piece);
    churn(piece.text.length);
    // The engine repeats entries: after a re-attach (the last second again) and when json-file
    // rotates under `logs -f` (megabytes again). Keys grow within one stream: an entry not after the
    // last one sent was sent (an equal key with another message is a distinct line of the same instant).
    const last = ch.last[stream];
    if (line.key < last.key || (line.key === last.key && line.message === last.message)) return;
    ch.last[stream] = { key: line.key, message: line.message };
    let frame: Uint8Array | undefined;
    let behind = false;
    for (const f of ch.followers) {
      if (f.service !== undefined && f.service !== line.service) continue;
      frame ??= encodeEvent({ data: toEntry(line) });
      f.deliver(line, frame);
      if (f.backlog > FOLLOWER_AHEAD_MAX) behind = true;
    }
    if (behind && !ch.paused) pause(ch);
  };

  /** Stops reading the engine stream until every follower took what it has (the chunk in hand still arrives). */
  const pause = (ch: Channel) => {
    ch.paused = true;
    // The stall rule counts from here: a follower is told of what it takes (`taken`) only once it had
    // fallen behind and caught up again, so one that kept up until now has its clock start now.
    const now = deps.clock.now();
    for (const f of ch.followers) ch.tookAt.set(f, now);
    ch.handle?.pause();
    ch.stall = setTimeout(() => checkStall(ch), FOLLOWER_STALL_MS);
  };

  const resume = (ch: Channel) => {
    ch.paused = false;
    clearTimeout(ch.stall);
    ch.stall = undefined;
    ch.handle?.resume();
  };

  /** Followers still behind are dropped if they took nothing for FOLLOWER_STALL_MS; the others are waited for. */
  const checkStall = (ch: Channel) => {
    ch.stall = undefined;
    if (ch.closed || !ch.paused) return;
    const now = deps.clock.now();
    let next = FOLLOWER_STALL_MS;
    for (const f of [...ch.followers]) {
      if (f.backlog <= FOLLOWER_AHEAD_MAX / 2) continue;
      const idle = now - (ch.tookAt.get(f) ?? 0);
      if (idle < FOLLOWER_STALL_MS) next = Math.min(next, FOLLOWER_STALL_MS - idle);
      else {
        deps.log.debug('log follower dropped: it took nothing while the stream waited', { workspaceId: ch.workspaceId, backlog: f.backlog });
        ch.followers.delete(f);
        ch.tookAt.delete(f);
        f.end('slow-reader');
      }
    }
    if (ch.followers.size === 0) return close(ch);
    if (caughtUp(ch)) return resume(ch);
    ch.stall = setTimeout(() => checkStall(ch), Math.max(next, 50));
  };

  const caughtUp = (ch: Channel) => {
    for (const f of ch.followers) if (f.backlog > FOLLOWER_AHEAD_MAX / 2) return false;
    return true;
  };

  const close = (ch: Channel) => {
    if (ch.closed) return;
    ch.closed = true;
    if (ch.waiting) clearTimeout(ch.waiting.timer);
    clearTimeout(ch.stall);
    ch.handle?.close();
    if (channels.get(ch.containerId) === ch) channels.delete(ch.containerId);
    if (byWorkspace.get(ch.workspaceId) === ch) byWorkspace.delete(ch.workspaceId);
  };

  const endAll = (ch: Channel, reason: EndReason) => {
    close(ch);
    for (const f of [...ch.followers]) f.end(reason);
    ch.followers.clear();
  };

  const attach = async (ch: Channel, sinceSeconds?: number) => {
    const parse = pieceParser();
    ch.attaching = true;
    let handle: LogStreamHandle;
    try {
      handle = await deps.engine.logStream(ch.containerId, { follow: true, tail: sinceSeconds === undefined ? 0 : 'all', sinceSeconds }, (s, piece) => dispatch(ch, parse, s, piece));
    } finally {
      ch.attaching = false;
    }
    if (ch.closed) return handle.close();
    ch.handle = handle;
    if (ch.paused) handle.pause();
    handle.done.then(() => onEngineEnd(ch, handle));
  };

  /** Attaches again from the last entry sent (or where the channel opened), once the container runs. */
  const reattach = async (ch: Channel) => {
    // Lines written during a restart (the new run's first ones) must not be lost: start at the
    // second of the last entry, or where the channel opened; what repeats is skipped by key.
    const lastTs = [ch.last.stdout.key, ch.last.stderr.key].sort().at(-1)?.split('#')[0] ?? '';
    const since = lastTs ? Math.floor(Date.parse(lastTs.replace(/\.\d+Z$/, 'Z')) / 1000) : ch.openedAt;
    try {
      await attach(ch, since);
    } catch (e) {
      deps.log.debug('log stream re-attach failed', { workspaceId: ch.workspaceId, err: (e as Error).message });
      const running = await deps.engine.inspect(ch.containerId).then(runState).catch(() => null);
      if (!ch.closed) endAll(ch, running === null ? 'deleted' : running === false ? 'stopped' : 'error');
    }
  };

  /** What a stopped stream does on the workspace's event: re-attach, end, or keep waiting. */
  const decide = (ch: Channel, event: LifecycleEvent | undefined) => {
    if (ch.closed || !ch.waiting || event === undefined) return;
    clearTimeout(ch.waiting.timer);
    ch.waiting = undefined;
    if (event === 'started' || event === 'restarted') return void reattach(ch);
    endAll(ch, event === 'deleted' ? 'deleted' : 'stopped');
  };

  const onEngineEnd = async (ch: Channel, handle: LogStreamHandle) => {
    if (ch.closed || ch.handle !== handle) return;
    ch.handle = undefined;
    const eventsBefore = ch.events;
    let running: boolean | null = null;
    try {
      running = await deps.engine.inspect(ch.containerId).then(runState);
    } catch (e) {
      deps.log.warn('log stream ended; engine state unknown', { workspaceId: ch.workspaceId, err: (e as Error).message });
    }
    if (ch.closed) return;
    // The engine dropped a live stream (it restarted, or a restart already ran again): pick up.
    if (running === true) return reattach(ch);
    if (running === null) return endAll(ch, 'deleted');
    // Stopped: a restart, a stop or a failure. The workspace's event says which; one that came while
    // the engine was asked, or an end event that came before the stream ended, decides at once.
    const seen = ch.event;
    ch.waiting = {
      timer: setTimeout(() => {
        ch.waiting = undefined;
        if (!ch.closed) endAll(ch, 'stopped');
      }, EVENT_WAIT_MS),
    };
    if (ch.events !== eventsBefore || seen === 'stopped' || seen === 'failed' || seen === 'deleted') decide(ch, seen);
  };

  const onEvent = (p: WorkspaceEventPayload) => {
    // The payload names the event as webhooks do: `workspace.started`.
    const event = p.event.replace(/^workspace\./, '');
    if (!RELEVANT.has(event)) return;
    const ch = byWorkspace.get(p.workspace.id);
    if (!ch || ch.closed) return;
    ch.event = event as LifecycleEvent;
    ch.events++;
    decide(ch, ch.event);
  };

  return {
    /** Follows the workspaces' events on the bus; returns the function that stops. */
    listen(bus: Bus): () => void {
      return bus.subscribe<'evt.workspace.started'>('evt.workspace.*', onEvent);
    },

    /**
     * Adds a follower to the workspace's channel, opening the engine stream if it is the first.
     * Resolves once lines written from now on will reach it.
     */
    async join(workspaceId: string, containerId: string, follower: Follower): Promise<Membership> {
      let ch = channels.get(containerId);
      if (!ch || ch.closed) {
        const fresh: Channel = {
          workspaceId,
          containerId,
          followers: new Set(),
          tookAt: new Map(),
          paused: false,
          attaching: false,
          ready: Promise.resolve(),
          last: { stdout: { key: '', message: '' }, stderr: { key: '', message: '' } },
          openedAt: Math.floor(deps.clock.now() / 1000),
          events: 0,
          closed: false,
        };
        fresh.ready = attach(fresh).catch((e) => {
          close(fresh);
          throw e;
        });
        channels.set(containerId, fresh);
        byWorkspace.set(workspaceId, fresh);
        ch = fresh;
      }
      const joined = ch;
      joined.followers.add(follower);
      joined.tookAt.set(follower, deps.clock.now());
      const leave = () => {
        joined.followers.delete(follower);
        joined.tookAt.delete(follower);
        if (joined.followers.size === 0) close(joined);
        else if (joined.paused && caughtUp(joined)) resume(joined);
      };
      const taken = () => {
        if (!joined.tookAt.has(follower)) return;
        joined.tookAt.set(follower, deps.clock.now());
        if (joined.paused && !joined.closed && caughtUp(joined)) resume(joined);
      };
      try {
        await joined.ready;
      } catch (e) {
        leave();
        throw e;
      }
      return { taken, leave };
    },

    /** True while the workspace's engine stream is open or being opened (so its container runs). */
    isLive(containerId: string): boolean {
      const ch = channels.get(containerId);
      return !!ch && !ch.closed && (ch.handle !== undefined || ch.attaching);
    },

    stats() {
      let followers = 0;
      const workspaces: { workspaceId: string; followers: number }[] = [];
      for (const ch of channels.values()) {
        followers += ch.followers.size;
        workspaces.push({ workspaceId: ch.workspaceId, followers: ch.followers.size });
      }
      return { followers, workspaces };
    },

    /** Ends every channel (platform shutdown). */
    closeAll() {
      for (const ch of [...channels.values()]) close(ch);
    },
  };
}

export type LogHub = ReturnType<typeof createLogHub>;
