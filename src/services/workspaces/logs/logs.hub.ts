// Fan-out of live logs: every follower of one workspace shares one engine log stream. The stream
// opens with the first follower and closes as soon as the last one leaves; each line is parsed and
// serialised once, then handed to every follower whose service filter matches.
import { encodeEvent } from '../../../platform/http/sse';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Clock, Logger } from '../../../platform/runtime';
import { runState, type Engine, type LogStreamHandle } from '../engine/engine';
import { parseEngineLine, toEntry, type ParsedLine } from './logs.parse';
import type { Access } from '../access';

export type EndReason = 'stopped' | 'deleted' | 'error';

export interface Follower {
  /** Only lines of this service; undefined = all. */
  service?: string;
  /** A matching line, with its SSE frame already encoded. */
  deliver(line: ParsedLine, frame: Uint8Array): void;
  /** The engine stream ended for good; the follower closes itself. */
  end(reason: EndReason): void;
}

interface Channel {
  workspaceId: string;
  containerId: string;
  followers: Set<Follower>;
  handle?: LogStreamHandle;
  /** Resolves once the engine stream is attached: later lines reach every follower. */
  ready: Promise<void>;
  /** Engine timestamp (fixed-width RFC 3339 ns, so strings compare in time order) of the last line. */
  lastTs: string;
  /** Unix seconds when the channel opened: where a re-attach starts when no line came yet. */
  openedAt: number;
  skipThrough: string;
  closed: boolean;
}

/** How long followers wait for a restarting workspace's container to run again. */
const RESTART_WAIT_MS = 60_000;
/** How long an end waits for a container being removed to stop reporting running. */
const SETTLE_MS = 5_000;
const SYSTEM: Actor = { id: 'keel-logs', admin: true };

export function createLogHub(deps: { engine: Engine; log: Logger; clock: Clock; access: Pick<Access, 'getOwned'> }) {
  /** The workspace's lifecycle status, or null when it is gone. */
  const statusOf = async (workspaceId: string): Promise<string | null> => {
    try {
      return deps.access.getOwned(SYSTEM, workspaceId).status;
    } catch {
      return null;
    }
  };

  const channels = new Map<string, Channel>();

  const dispatch = (ch: Channel, stream: 'stdout' | 'stderr', raw: string) => {
    const line = parseEngineLine(stream, raw);
    // After a re-attach the engine repeats lines of the last second: skip what was sent.
    if (ch.skipThrough) {
      if (line.ts <= ch.skipThrough) return;
      ch.skipThrough = '';
    }
    if (line.ts) ch.lastTs = line.ts;
    let frame: Uint8Array | undefined;
    for (const f of ch.followers) {
      if (f.service !== undefined && f.service !== line.service) continue;
      frame ??= encodeEvent({ data: toEntry(line) });
      f.deliver(line, frame);
    }
  };

  const close = (ch: Channel) => {
    if (ch.closed) return;
    ch.closed = true;
    ch.handle?.close();
    if (channels.get(ch.containerId) === ch) channels.delete(ch.containerId);
  };

  const attach = async (ch: Channel, sinceSeconds?: number) => {
    const handle = await deps.engine.logStream(ch.containerId, { follow: true, tail: sinceSeconds === undefined ? 0 : 'all', sinceSeconds }, (s, l) => dispatch(ch, s, l));
    if (ch.closed) return handle.close();
    ch.handle = handle;
    handle.done.then(() => onEngineEnd(ch, handle));
  };

  const onEngineEnd = async (ch: Channel, handle: LogStreamHandle) => {
    if (ch.closed || ch.handle !== handle) return;
    let running: boolean | null = null;
    try {
      running = await deps.engine.inspect(ch.containerId).then(runState);
    } catch (e) {
      deps.log.warn('log stream ended; engine state unknown', { workspaceId: ch.workspaceId, err: (e as Error).message });
    }
    // A restart stops the container first: wait for it to run again instead of ending the stream.
    const until = deps.clock.now() + RESTART_WAIT_MS;
    while (running === false && !ch.closed && deps.clock.now() < until && ['restarting', 'starting'].includes((await statusOf(ch.workspaceId)) ?? '')) {
      await Bun.sleep(250);
      running = await deps.engine.inspect(ch.containerId).then(runState).catch(() => false);
    }
    if (ch.closed) return;
    if (running === true) {
      // The engine dropped a live stream (e.g. it restarted): pick up from the last line seen.
      // Without a line seen yet, start where the channel opened: lines written during the restart
      // (the new container's first ones) must not be lost; a repeat of that second is the lesser harm.
      const since = ch.lastTs ? Math.floor(Date.parse(ch.lastTs.replace(/\.\d+Z$/, 'Z')) / 1000) : ch.openedAt;
      ch.skipThrough = ch.lastTs;
      try {
        return await attach(ch, since);
      } catch (e) {
        // A container being removed can still report running for a moment: let its state settle
        // (gone, or no longer running) before naming the end, for up to SETTLE_MS.
        deps.log.debug('log stream re-attach failed', { workspaceId: ch.workspaceId, err: (e as Error).message });
        const settleUntil = deps.clock.now() + SETTLE_MS;
        do {
          running = (await statusOf(ch.workspaceId)) === null ? null : await deps.engine.inspect(ch.containerId).then(runState).catch(() => null);
          if (running !== true) break;
          await Bun.sleep(250);
        } while (!ch.closed && deps.clock.now() < settleUntil);
      }
    }
    const reason: EndReason = running === null ? 'deleted' : running === false ? 'stopped' : 'error';
    close(ch);
    for (const f of [...ch.followers]) f.end(reason);
    ch.followers.clear();
  };

  return {
    /**
     * Adds a follower to the workspace's channel, opening the engine stream if it is the first.
     * Resolves once lines written from now on will reach it; returns the function that removes it.
     */
    async join(workspaceId: string, containerId: string, follower: Follower): Promise<() => void> {
      let ch = channels.get(containerId);
      if (!ch || ch.closed) {
        const fresh: Channel = { workspaceId, containerId, followers: new Set(), ready: Promise.resolve(), lastTs: '', openedAt: Math.floor(deps.clock.now() / 1000), skipThrough: '', closed: false };
        fresh.ready = attach(fresh).catch((e) => {
          close(fresh);
          throw e;
        });
        channels.set(containerId, fresh);
        ch = fresh;
      }
      const joined = ch;
      joined.followers.add(follower);
      const leave = () => {
        joined.followers.delete(follower);
        if (joined.followers.size === 0) close(joined);
      };
      try {
        await joined.ready;
      } catch (e) {
        leave();
        throw e;
      }
      return leave;
    },

    /** True while the workspace's engine stream is open (so its container runs). */
    isLive(containerId: string): boolean {
      const ch = channels.get(containerId);
      return !!ch && !ch.closed && ch.handle !== undefined;
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
