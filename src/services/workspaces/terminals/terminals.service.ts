// Terminals: a real PTY in a workspace (`docker exec` with a TTY), reached over a WebSocket. Browsers
// cannot send an Authorization header with a WebSocket, so a Bearer-authorised POST hands out a
// ticket: single-use, valid TICKET_MS. A terminal outlives its socket for DETACHED_MS; what it writes
// meanwhile is kept (the last RING_BYTES) and replayed first to the next socket. A terminal holds one
// of its actor's APP_QUOTA_STREAMS slots for as long as it lives. Terminals live in this process
// only: a restart of Keel ends them.
import { randomBytes } from 'node:crypto';
import { newId, type Clock } from '../../../platform/runtime';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, type Engine, type TtyHandle } from '../engine/engine';
import { engineFailure, type Access } from '../access';
import type { QuotaSlot, Quotas } from '../quotas';
import { WorkspaceErrors } from '../workspaces.errors';

export const TICKET_MS = 60_000;
export const DETACHED_MS = 10 * 60_000;
export const RING_BYTES = 64 * 1024;

/** Where a terminal's bytes go while a socket is attached (the routes' WebSocket). */
export interface TerminalSink {
  send(bytes: Uint8Array): void;
  /** The terminal ended (its process exited, or it was detached too long): close the socket. */
  end(reason: string): void;
}

interface Terminal {
  id: string;
  workspaceId: string;
  owner: string;
  handle: TtyHandle;
  slot: QuotaSlot;
  ring: Uint8Array[];
  ringBytes: number;
  sink?: TerminalSink;
  detachTimer?: ReturnType<typeof setTimeout>;
  ended: boolean;
}

export interface TerminalInput {
  cols?: number;
  rows?: number;
  command?: string;
}

export function createTerminalsService(deps: {
  engine: Engine;
  access: Pick<Access, 'getOwned' | 'runningContainer'>;
  quotas: Pick<Quotas, 'take'>;
  clock: Clock;
  /** Terminal input is activity: it resets the workspace's idle stop. */
  onActivity: (workspaceId: string) => void;
}) {
  const { engine, clock } = deps;
  const terminals = new Map<string, Terminal>();
  const tickets = new Map<string, { terminalId: string; expiresAt: number }>();

  function keep(term: Terminal, bytes: Uint8Array) {
    term.ring.push(bytes);
    term.ringBytes += bytes.byteLength;
    while (term.ringBytes - term.ring[0]!.byteLength >= RING_BYTES) term.ringBytes -= term.ring.shift()!.byteLength;
  }

  function end(term: Terminal, reason: string) {
    if (term.ended) return;
    term.ended = true;
    clearTimeout(term.detachTimer);
    terminals.delete(term.id);
    term.slot.release();
    term.handle.close();
    term.sink?.end(reason);
    term.sink = undefined;
  }

  function detachTimer(term: Terminal) {
    clearTimeout(term.detachTimer);
    term.detachTimer = setTimeout(() => end(term, 'detached for too long'), DETACHED_MS);
  }

  function issue(term: Terminal) {
    const ticket = randomBytes(24).toString('base64url');
    const expiresAt = clock.now() + TICKET_MS;
    tickets.set(ticket, { terminalId: term.id, expiresAt });
    // Forgotten once expired, used or not.
    setTimeout(() => tickets.delete(ticket), TICKET_MS + 1000).unref?.();
    return { id: term.id, ticket, expiresAt: new Date(expiresAt).toISOString() };
  }

  async function owned(actor: Actor, workspaceId: string, tid: string): Promise<Terminal> {
    await deps.access.getOwned(actor, workspaceId);
    const term = terminals.get(tid);
    if (!term || term.workspaceId !== workspaceId) throw WorkspaceErrors.TERMINAL_NOT_FOUND('terminal not found');
    return term;
  }

  return {
    /** Starts a shell (or `command`) on a new TTY; answers the terminal and a ticket to attach to it. */
    async open(actor: Actor, workspaceId: string, input: TerminalInput) {
      const containerId = await deps.access.runningContainer(actor, workspaceId);
      const slot = deps.quotas.take(actor, 'streams');
      const id = newId('term', clock);
      let term: Terminal | undefined;
      const early: Uint8Array[] = [];
      const onData = (b: Uint8Array) => {
        if (!term) return void early.push(b);
        keep(term, b);
        term.sink?.send(b);
      };
      const cmd = ['sh', '-c', input.command ?? 'exec sh -l'];
      let handle: TtyHandle;
      try {
        handle = await engine.execTty(containerId, { cmd, env: ['TERM=xterm-256color'], cols: input.cols ?? 80, rows: input.rows ?? 24 }, onData);
      } catch (e) {
        slot.release();
        if (e instanceof EngineError && (e.kind === 'conflict' || e.kind === 'not-found')) throw WorkspaceErrors.WORKSPACE_NOT_RUNNING('the workspace is not running; start it to open a terminal', {});
        throw engineFailure(e);
      }
      const made: Terminal = { id, workspaceId, owner: actor.id, handle, slot, ring: [], ringBytes: 0, ended: false };
      term = made;
      terminals.set(id, made);
      for (const b of early.splice(0)) keep(made, b);
      detachTimer(made);
      handle.done.then(() => end(made, 'the terminal process ended'));
      return issue(made);
    },

    /** A new ticket for a terminal of the actor's (to reattach after its socket closed). */
    async ticket(actor: Actor, workspaceId: string, tid: string) {
      return issue(await owned(actor, workspaceId, tid));
    },

    /**
     * Spends a ticket: 401 UNAUTHORIZED when it is unknown, used or expired (nothing says which, as
     * for a bad token); 404 TERMINAL_NOT_FOUND when the terminal has ended or is not this workspace's.
     */
    redeem(workspaceId: string, tid: string, ticket: string): string {
      const found = tickets.get(ticket);
      tickets.delete(ticket);
      if (!found || found.expiresAt <= clock.now() || found.terminalId !== tid) throw WorkspaceErrors.UNAUTHORIZED('the terminal ticket is unknown, used or expired; ask for a new one');
      const term = terminals.get(tid);
      if (!term || term.workspaceId !== workspaceId) throw WorkspaceErrors.TERMINAL_NOT_FOUND('terminal not found');
      return tid;
    },

    /** Attaches a socket: it first receives what is kept, then the live bytes. A socket attached before is closed. */
    attach(tid: string, sink: TerminalSink): boolean {
      const term = terminals.get(tid);
      if (!term) {
        sink.end('the terminal has ended');
        return false;
      }
      const before = term.sink;
      term.sink = sink;
      before?.end('attached elsewhere');
      clearTimeout(term.detachTimer);
      if (term.ringBytes) sink.send(Buffer.concat(term.ring));
      return true;
    },

    /** The socket went away: the terminal lives on, kept for the next ticket, for DETACHED_MS. */
    detach(tid: string, sink: TerminalSink) {
      const term = terminals.get(tid);
      if (!term || term.sink !== sink) return;
      term.sink = undefined;
      detachTimer(term);
    },

    async input(tid: string, bytes: Uint8Array) {
      const term = terminals.get(tid);
      if (!term) return;
      deps.onActivity(term.workspaceId);
      await term.handle.write(bytes).catch(() => undefined);
    },

    async resize(tid: string, cols: number, rows: number) {
      const term = terminals.get(tid);
      if (!term) return;
      await term.handle.resize(cols, rows).catch(() => undefined);
    },

    /** Keel is stopping: every terminal ends. */
    close() {
      for (const term of [...terminals.values()]) end(term, 'Keel is shutting down');
    },
  };
}

export type TerminalsService = ReturnType<typeof createTerminalsService>;
