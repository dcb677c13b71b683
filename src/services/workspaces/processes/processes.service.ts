// Long-running processes in a workspace: started by one request, they outlive it. Keel holds each
// one's engine exec (stdin open) and keeps the last APP_PROCESS_OUTPUT_BYTES of each stream in memory
// as numbered events, so followers replay after Last-Event-ID and a client that went away loses
// nothing. The row (what ran, how it ended) is stored: a restart of Keel marks rows it no longer
// follows as `lost`, never "running". A small wrapper reports the command's pid first, so signals
// reach its whole process group.
import type { Store } from '../../../platform/store';
import type { SseEvent } from '../../../platform/http/sse';
import { newId, type Clock } from '../../../platform/runtime';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, type Engine, type ExecHandle, type StdStream } from '../engine/engine';
import { engineFailure, type Access } from '../access';
import { quotaExceeded, type Quotas } from '../quotas';
import type { ProcessRow } from './processes.tables';
import { createProcessesRepository } from './processes.repository';
import type { ProcessInput, ProcessView } from './processes.model';
import { WorkspaceErrors } from '../workspaces.errors';

const MARK_PID = '\x1ekeel-pid ';
const MARK_NO_WORKDIR = '\x1ekeel-no-workdir';
/** As exec's wrapper: $1 = workdir, $2 = command; the pid on the first stderr line, then the command's shell in the same process. */
const WRAPPER =
  `if [ -n "$1" ] && ! cd -- "$1" 2>/dev/null; then printf '\\036keel-no-workdir\\n' >&2; exit 126; fi; ` +
  `printf '\\036keel-pid %s\\n' "$$" >&2; exec sh -c "$2"`;
/** Ended processes whose output stays readable in memory (the oldest is forgotten first; its row stays). */
const ENDED_KEPT = 256;

interface OutputEvent {
  id: number;
  stream: StdStream;
  data: string;
  bytes: number;
}

interface Live {
  id: string;
  workspaceId: string;
  containerId: string;
  handle: ExecHandle;
  pid?: number;
  seq: number;
  kept: Record<StdStream, OutputEvent[]>;
  keptBytes: Record<StdStream, number>;
  exit?: { exitCode: number };
  /** Woken when an event or the exit arrives. */
  waiters: Set<() => void>;
}

export interface ProcessesSettings {
  /** APP_QUOTA_PROCESSES: running processes per actor. */
  quota: number;
  /** APP_PROCESS_OUTPUT_BYTES: bytes of each stream kept. */
  outputBytes: number;
}

export function createProcessesService(deps: {
  store: Store;
  engine: Engine;
  access: Pick<Access, 'getOwned' | 'runningContainer'>;
  quotas: Pick<Quotas, 'holdingStream'>;
  clock: Clock;
  settings: ProcessesSettings;
}) {
  const { engine, clock, settings } = deps;
  const rows = createProcessesRepository(deps.store);
  const live = new Map<string, Live>();
  const ended: string[] = [];
  /** Running processes per actor (admins are not counted). */
  const runningOf = new Map<string, number>();
  const iso = () => new Date(clock.now()).toISOString();
  let closing = false;

  const view = (r: ProcessRow): ProcessView => ({
    id: r.id,
    ...(r.name ? { name: r.name } : {}),
    command: r.command,
    status: r.status,
    startedAt: r.startedAt,
    ...(r.exitCode !== null ? { exitCode: r.exitCode } : {}),
    ...(r.endedAt ? { endedAt: r.endedAt } : {}),
  });

  /** The process row if its workspace is the actor's (another actor's answers 404 WORKSPACE_NOT_FOUND first). */
  async function owned(actor: Actor, workspaceId: string, pid: string): Promise<ProcessRow> {
    await deps.access.getOwned(actor, workspaceId);
    const row = await rows.get(workspaceId, pid);
    if (!row) throw WorkspaceErrors.PROCESS_NOT_FOUND('process not found');
    return row;
  }

  async function running(actor: Actor, workspaceId: string, pid: string): Promise<Live> {
    const row = await owned(actor, workspaceId, pid);
    const p = live.get(row.id);
    if (row.status !== 'running' || !p || p.exit) throw WorkspaceErrors.PROCESS_NOT_RUNNING(`the process is ${row.status === 'running' ? 'ending' : row.status}`, { status: row.status });
    return p;
  }

  const wake = (p: Live) => {
    for (const w of [...p.waiters]) w();
  };

  function keep(p: Live, stream: StdStream, data: string, bytes: number) {
    if (!data) return;
    p.kept[stream].push({ id: ++p.seq, stream, data, bytes });
    p.keptBytes[stream] += bytes;
    // The last outputBytes of each stream: whole events are dropped from the front.
    while (p.keptBytes[stream] > settings.outputBytes && p.kept[stream].length > 1) p.keptBytes[stream] -= p.kept[stream].shift()!.bytes;
    wake(p);
  }

  async function finish(p: Live, exitCode: number, release: () => void) {
    p.exit = { exitCode };
    // A row left `running` by a failed write is marked lost at the next start.
    await rows.exited(p.id, exitCode, iso()).catch(() => undefined);
    release();
    ended.push(p.id);
    while (ended.length > ENDED_KEPT) live.delete(ended.shift()!);
    wake(p);
  }

  function takeSlot(actor: Actor): () => void {
    if (actor.admin) return () => {};
    const n = runningOf.get(actor.id) ?? 0;
    if (n >= settings.quota) throw quotaExceeded('processes', settings.quota);
    runningOf.set(actor.id, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (runningOf.get(actor.id) ?? 1) - 1;
      if (left > 0) runningOf.set(actor.id, left);
      else runningOf.delete(actor.id);
    };
  }

  return {
    /** Starts the command; it runs until it ends, whoever is listening. */
    async start(actor: Actor, workspaceId: string, input: ProcessInput): Promise<ProcessView> {
      const containerId = await deps.access.runningContainer(actor, workspaceId);
      const release = takeSlot(actor);
      const id = newId('proc', clock);
      const dec = { stdout: new TextDecoder(), stderr: new TextDecoder() };
      let p: Live | undefined;
      let preamble = '';
      let reported = false;
      let noWorkdir = false;
      let reportedPid: number | undefined;
      // Output that arrives before the process's record exists (its insert is awaited), bounded as
      // `kept` is: the last outputBytes of each stream, whole chunks dropped from the front.
      const early: [StdStream, Uint8Array][] = [];
      const earlyBytes = { stdout: 0, stderr: 0 };
      const onChunk = (s: StdStream, b: Uint8Array) => {
        if (s === 'stderr' && !reported) {
          preamble += Buffer.from(b).toString('latin1');
          const nl = preamble.indexOf('\n');
          if (nl < 0) return;
          reported = true;
          const first = preamble.slice(0, nl);
          if (first.startsWith(MARK_NO_WORKDIR)) noWorkdir = true;
          else reportedPid = Number(first.slice(MARK_PID.length)) || undefined;
          if (p) p.pid = reportedPid;
          const rest = Buffer.from(preamble.slice(nl + 1), 'latin1');
          if (rest.byteLength) onChunk('stderr', rest);
          return;
        }
        if (!p) {
          early.push([s, b]);
          earlyBytes[s] += b.byteLength;
          for (let at = early.findIndex(([es]) => es === s); earlyBytes[s] > settings.outputBytes && at < early.length - 1; at = early.findIndex(([es]) => es === s)) {
            earlyBytes[s] -= early[at]![1].byteLength;
            early.splice(at, 1);
          }
          return;
        }
        keep(p, s, dec[s].decode(b, { stream: true }), b.byteLength);
      };
      const env = input.env ? Object.entries(input.env).map(([k, v]) => `${k}=${v}`) : undefined;
      let handle: ExecHandle;
      try {
        handle = await engine.execStart(containerId, { cmd: ['sh', '-c', WRAPPER, 'keel-process', input.workdir ?? '', input.command], env, stdin: true }, onChunk);
      } catch (e) {
        release();
        if (e instanceof EngineError && (e.kind === 'conflict' || e.kind === 'not-found')) throw WorkspaceErrors.WORKSPACE_NOT_RUNNING('the workspace is not running; start it to run processes', {});
        throw engineFailure(e);
      }
      const startedAt = iso();
      await rows.insert({ id, workspaceId, owner: actor.id, name: input.name ?? null, command: input.command, status: 'running', startedAt });
      const made: Live = { id, workspaceId, containerId, handle, seq: 0, kept: { stdout: [], stderr: [] }, keptBytes: { stdout: 0, stderr: 0 }, waiters: new Set() };
      p = made;
      live.set(id, made);
      made.pid = reportedPid;
      for (const [s, b] of early.splice(0)) keep(made, s, dec[s].decode(b, { stream: true }), b.byteLength);
      handle.done
        .then(async () => {
          // Keel is stopping: the row stays `running`, and the next start marks it lost.
          if (closing) return;
          for (const s of ['stdout', 'stderr'] as const) keep(made, s, dec[s].decode(), 0);
          if (noWorkdir) keep(made, 'stderr', 'keel: workdir does not exist in the workspace\n', 0);
          // The output can end a moment before the engine records the exit.
          let code: number | null = null;
          for (let i = 0; i < 50 && code === null; i++) {
            code = await handle.exitCode().catch(() => -1);
            if (code === null) await Bun.sleep(10);
          }
          if (!closing) await finish(made, code ?? -1, release);
        })
        .catch(async () => {
          if (!closing) await finish(made, -1, release);
        });
      return { id, ...(input.name ? { name: input.name } : {}), command: input.command, status: 'running', startedAt };
    },

    async list(actor: Actor, workspaceId: string): Promise<ProcessView[]> {
      await deps.access.getOwned(actor, workspaceId);
      return (await rows.list(workspaceId, 500)).map(view);
    },

    get: async (actor: Actor, workspaceId: string, pid: string): Promise<ProcessView> => view(await owned(actor, workspaceId, pid)),

    /** What is kept of each stream so far. */
    async output(actor: Actor, workspaceId: string, pid: string): Promise<{ stdout: string; stderr: string }> {
      await owned(actor, workspaceId, pid);
      const p = live.get(pid);
      const text = (s: StdStream) => (p ? p.kept[s].map((e) => e.data).join('') : '');
      return { stdout: text('stdout'), stderr: text('stderr') };
    },

    /**
     * The output as SSE events (ids in order across both streams): what is kept after `after`, then
     * as written, then one `exit`. Checks ownership now; the events come as the client reads.
     * Holds one of the actor's stream slots until `signal` aborts (429 first when none is left).
     */
    follow(actor: Actor, workspaceId: string, pid: string, after: number, signal: AbortSignal): Promise<AsyncIterable<SseEvent>> {
      return deps.quotas.holdingStream(actor, signal, async () => {
        const row = await owned(actor, workspaceId, pid);
        const p = live.get(pid);
        return (async function* () {
          if (!p) {
            // Forgotten (or lost in a restart): only how it ended is known.
            yield { id: 1, event: 'exit', data: row.status === 'lost' ? { exitCode: null, status: 'lost' } : { exitCode: row.exitCode } };
            return;
          }
          let last = after;
          for (;;) {
            const next = [...p.kept.stdout, ...p.kept.stderr].filter((e) => e.id > last).sort((a, b) => a.id - b.id);
            for (const e of next) {
              last = e.id;
              yield { id: e.id, event: e.stream, data: { data: e.data } };
            }
            if (p.exit && next.length === 0) {
              yield { id: p.seq + 1, event: 'exit', data: { exitCode: p.exit.exitCode } };
              return;
            }
            if (next.length > 0) continue;
            if (signal.aborted) return;
            await new Promise<void>((resolve) => {
              const done = () => {
                p.waiters.delete(done);
                signal.removeEventListener('abort', done);
                resolve();
              };
              p.waiters.add(done);
              signal.addEventListener('abort', done, { once: true });
            });
          }
        })();
      });
    },

    /** Writes a request body to the process's stdin as it arrives; `eof` closes stdin after it. */
    async stdin(actor: Actor, workspaceId: string, pid: string, body: ReadableStream<Uint8Array> | null, eof: boolean) {
      const p = await running(actor, workspaceId, pid);
      let bytes = 0;
      try {
        if (body) {
          for await (const chunk of body) {
            await p.handle.stdin!.write(chunk);
            bytes += chunk.byteLength;
          }
        }
        if (eof) p.handle.stdin!.end();
      } catch {
        throw WorkspaceErrors.PROCESS_NOT_RUNNING('the process closed its input or ended');
      }
      return { id: pid, bytes };
    },

    /** Sends `signal` to the process's whole group (the command and what it started). */
    async signal(actor: Actor, workspaceId: string, pid: string, signal: 'TERM' | 'KILL' | 'INT' | 'HUP') {
      const p = await running(actor, workspaceId, pid);
      // The wrapper reports the pid within milliseconds of the start; a signal sent at once waits for it.
      for (let i = 0; i < 100 && !p.pid && !p.exit; i++) await Bun.sleep(20);
      if (!p.pid || p.pid <= 1) throw WorkspaceErrors.PROCESS_NOT_RUNNING('the process has not started yet; try again');
      try {
        await engine.execCollect(p.containerId, ['kill', `-${signal}`, `-${p.pid}`]);
      } catch (e) {
        throw engineFailure(e);
      }
      return { id: pid, signalled: true as const };
    },

    /** At start-up: rows a previous run left `running` are processes nobody follows any more. */
    async markLost(): Promise<number> {
      return rows.markAllLost(iso());
    },

    /** Stops reading every process (Keel shutting down); the processes themselves are the engine's. */
    close() {
      closing = true;
      for (const p of live.values()) if (!p.exit) p.handle.close();
    },
  };
}

export type ProcessesService = ReturnType<typeof createProcessesService>;
