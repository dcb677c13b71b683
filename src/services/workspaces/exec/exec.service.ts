// Command execution in a running workspace: `sh -c` with a workdir, env and timeout. A small wrapper
// reports the command's pid first (an engine exec process leads its own process group), so at the
// timeout, or when the client goes away, Keel kills the whole group through a second exec. Every
// command holds one of its actor's exec slots (APP_QUOTA_EXECS) until it is gone, taken here whoever
// asks (the HTTP route, an MCP tool, an agent's tool), so they all count alike.
import { toEnvelope } from '../../../platform/errors';
import { WorkspaceErrors } from '../workspaces.errors';
import type { SseEvent } from '../../../platform/http/sse';
import { createInbox } from '../../../platform/inbox';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, type Engine, type ExecHandle, type StdStream } from '../engine/engine';
import { EXEC_OUTPUT_MAX_BYTES, EXEC_TIMEOUT_DEFAULT_MS, EXIT_TIMED_OUT, type ExecExit, type ExecInput, type ExecResult } from './exec.model';
import { engineFailure, type Access } from '../access';
import type { Quotas } from '../quotas';

/** Output bytes of a streaming exec waiting for its client past which the command is held back, and below which it runs again. */
const STREAM_PAUSE_BYTES = 1024 * 1024;
const STREAM_RESUME_BYTES = 64 * 1024;

const MARK_PID = '\x1ekeel-pid ';
const MARK_NO_WORKDIR = '\x1ekeel-no-workdir';

/**
 * How long a kill waits for the wrapper's pid line. It comes within milliseconds of the start; the
 * bound only keeps a kill from hanging on an engine that never delivers the output.
 */
const PID_REPORT_WAIT_MS = 5000;

/**
 * $1 = workdir ('' = the container's), $2 = command. Changes directory, reports the pid on the first
 * stderr line, then becomes the command's shell (same pid, same process group).
 */
const WRAPPER =
  `if [ -n "$1" ] && ! cd -- "$1" 2>/dev/null; then printf '\\036keel-no-workdir\\n' >&2; exit 126; fi; ` +
  `printf '\\036keel-pid %s\\n' "$$" >&2; exec sh -c "$2"`;

/** Bytes kept per stream; beyond it the rest is read and dropped (the process is never blocked). */
function cappedBuffer(max: number) {
  const parts: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  return {
    push(b: Uint8Array) {
      const room = max - size;
      if (b.byteLength > room) {
        truncated = true;
        if (room > 0) parts.push(b.subarray(0, room));
        size = max;
        return;
      }
      parts.push(b);
      size += b.byteLength;
    },
    get truncated() {
      return truncated;
    },
    /** UTF-8 text; invalid sequences (binary output, a cut multi-byte character) become U+FFFD. */
    text() {
      return new TextDecoder('utf-8').decode(Buffer.concat(parts));
    },
  };
}

interface Running {
  /** Settles with the exit once the process ended, or at once with 124 at the timeout. */
  exit: Promise<ExecExit>;
  /** Kills the process group (client gone); nothing once the process has ended. */
  kill(): Promise<void>;
  pause(): void;
  resume(): void;
}

export function createExecService(deps: {
  engine: Engine;
  access: Pick<Access, 'runningContainer'>;
  quotas: Pick<Quotas, 'take' | 'holdingStream'>;
  /** Each command's wall time once it is gone, counted against its caller (usage reports). */
  onExecEnd?: (actor: Actor, workspaceId: string, ms: number) => void;
}) {
  const { engine } = deps;
  let active = 0;

  const runningContainer = (actor: Actor, id: string) => deps.access.runningContainer(actor, id);

  /** Starts the command; `onOutput` sees the command's own bytes (the wrapper's pid line removed). */
  async function launch(containerId: string, input: ExecInput, onOutput: (s: StdStream, b: Uint8Array) => void): Promise<Running> {
    const started = performance.now();
    let pid: number | undefined;
    let noWorkdir = false;
    let preamble = '';
    let killed: Promise<void> | undefined;
    let handle: ExecHandle | undefined;

    let ended = false;
    // Settles once the wrapper's first line (pid or missing workdir) arrived, or the output ended without it.
    const reported = Promise.withResolvers<void>();
    // A kill asked for before the pid is known (a timeout of 1 ms, a client gone at once, an early
    // cancel) waits for the report: the command starts anyway, so killing "nothing" would leave it
    // running outside the exec quota. pid > 1 always holds for a real report; the guard keeps
    // `kill -1` (every process) impossible.
    const killGroup = () =>
      (killed ??= (async () => {
        const waited = Promise.withResolvers<void>();
        const cap = setTimeout(waited.resolve, PID_REPORT_WAIT_MS);
        await Promise.race([reported.promise, waited.promise]);
        clearTimeout(cap);
        if (!ended && pid !== undefined && pid > 1) await engine.killProcessGroup(containerId, pid);
      })());

    const onChunk = (s: StdStream, b: Uint8Array) => {
      if (s === 'stderr' && pid === undefined && !noWorkdir) {
        // The first stderr line is the wrapper's: the pid, or the missing workdir.
        preamble += Buffer.from(b).toString('latin1');
        const nl = preamble.indexOf('\n');
        if (nl < 0) return;
        const first = preamble.slice(0, nl);
        if (first.startsWith(MARK_NO_WORKDIR)) noWorkdir = true;
        else pid = Number(first.slice(MARK_PID.length)) || -1;
        reported.resolve();
        const rest = Buffer.from(preamble.slice(nl + 1), 'latin1');
        if (rest.byteLength) onOutput('stderr', rest);
        return;
      }
      onOutput(s, b);
    };

    const env = input.env ? Object.entries(input.env).map(([k, v]) => `${k}=${v}`) : undefined;
    try {
      handle = await engine.execStart(containerId, { cmd: ['sh', '-c', WRAPPER, 'keel-exec', input.workdir ?? '', input.command], env }, onChunk);
    } catch (e) {
      if (e instanceof EngineError && (e.kind === 'conflict' || e.kind === 'not-found')) throw WorkspaceErrors.WORKSPACE_NOT_RUNNING('the workspace is not running; start it to run commands', {});
      throw engineFailure(e);
    }
    const h = handle;
    h.done.then(reported.resolve, reported.resolve);
    active++;
    let counted = true;
    const release = () => {
      if (counted) active--;
      counted = false;
    };

    const timeoutMs = input.timeout ?? EXEC_TIMEOUT_DEFAULT_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let expired = false;
    const timedOut = new Promise<ExecExit>((resolve) => {
      timer = setTimeout(async () => {
        // Set first: the killed process ends the output, and that exit (137) must not win the race.
        expired = true;
        await killGroup();
        h.close();
        resolve({ exitCode: EXIT_TIMED_OUT, duration: Math.round(performance.now() - started), timedOut: true });
      }, timeoutMs);
    });
    const finished = h.done.then(async (): Promise<ExecExit | never> => {
      if (expired) return timedOut;
      if (noWorkdir) throw WorkspaceErrors.INVALID_REQUEST('workdir does not exist in the workspace', { field: 'workdir' });
      // The output can end a moment before the engine records the exit.
      let code: number | null = null;
      for (let i = 0; i < 20 && code === null; i++) {
        code = await h.exitCode().catch(() => -1);
        if (code === null) await Bun.sleep(10);
      }
      if (expired) return timedOut;
      return { exitCode: code ?? -1, duration: Math.round(performance.now() - started), timedOut: false };
    });
    const exit = Promise.race([finished, timedOut]).finally(() => {
      ended = true;
      clearTimeout(timer);
      release();
    });
    return {
      exit,
      async kill() {
        clearTimeout(timer);
        await killGroup();
        ended = true;
        h.close();
        release();
      },
      pause: () => h.pause(),
      resume: () => h.resume(),
    };
  }

  /**
   * The events of a streaming exec. `onGone` runs once the command is gone (ended, or killed when the
   * stream ends first), or at the abort of a stream that never began to read (nothing was started).
   */
  function streamOutput(containerId: string, input: ExecInput, signal: AbortSignal, onGone: () => void): AsyncGenerator<SseEvent> {
    let begun = false;
    const gone = () => {
      signal.removeEventListener('abort', unstarted);
      onGone();
    };
    const unstarted = () => {
      if (!begun) gone();
    };
    signal.addEventListener('abort', unstarted, { once: true });
    if (signal.aborted) unstarted();
    return (async function* () {
      begun = true;
      try {
        yield* streamEvents(containerId, input, signal);
      } finally {
        gone();
      }
    })();
  }

  async function* streamEvents(containerId: string, input: ExecInput, signal: AbortSignal): AsyncGenerator<SseEvent> {
    const inbox = createInbox<SseEvent>(signal);
    const dec = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    let r: Running | undefined;
    // Events are taken as the client reads: past a backlog the engine stream is held back (the
    // command blocks on write) instead of growing memory, and let go once the client caught up.
    let paused = false;
    const onOutput = (s: StdStream, b: Uint8Array) => {
      const text = dec[s].decode(b, { stream: true });
      if (text) inbox.push({ event: s, data: { data: text } }, b.byteLength);
      if (!paused && inbox.bytes > STREAM_PAUSE_BYTES) {
        paused = true;
        r?.pause();
      }
    };
    try {
      r = await launch(containerId, input, onOutput);
    } catch (e) {
      // The stream is open (e.g. the container stopped in between): its last event says why.
      yield { event: 'error', data: toEnvelope(engineFailure(e)) };
      return;
    }
    const running = r;
    running.exit.then(
      (exit) => {
        for (const s of ['stdout', 'stderr'] as const) {
          const rest = dec[s].decode();
          if (rest) inbox.push({ event: s, data: { data: rest } });
        }
        inbox.push({ event: 'exit', data: exit });
        inbox.end();
      },
      (e) => {
        inbox.push({ event: 'error', data: toEnvelope(engineFailure(e)) });
        inbox.end();
      },
    );
    try {
      for await (const ev of inbox) {
        yield ev;
        if (paused && inbox.bytes < STREAM_RESUME_BYTES) {
          paused = false;
          running.resume();
        }
      }
    } finally {
      // Nothing once the command has ended; else the client left or Keel shuts down: kill it, and
      // end only once the kill is done (the caller's exec slot is held until then).
      await running.kill();
    }
  }

  /** Runs `op` holding one of the actor's exec slots (429 QUOTA_EXCEEDED first when none is left). */
  async function withExecSlot<T>(actor: Actor, op: () => Promise<T>): Promise<T> {
    const slot = deps.quotas.take(actor, 'execs');
    try {
      return await op();
    } finally {
      slot.release();
    }
  }

  /** Runs to completion (or the timeout) and answers the Exec result; the slot is taken by the caller. */
  async function runCommand(actor: Actor, id: string, input: ExecInput, signal?: AbortSignal): Promise<ExecResult> {
    const containerId = await runningContainer(actor, id);
    const out = { stdout: cappedBuffer(EXEC_OUTPUT_MAX_BYTES), stderr: cappedBuffer(EXEC_OUTPUT_MAX_BYTES) };
    const r = await launch(containerId, input, (s, b) => out[s].push(b));
    const onAbort = () => void r.kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    // The client may have left while the command was being started: no abort event will come.
    if (signal?.aborted) onAbort();
    try {
      const exit = await r.exit;
      deps.onExecEnd?.(actor, id, exit.duration);
      return {
        exitCode: exit.exitCode,
        stdout: out.stdout.text(),
        stderr: out.stderr.text(),
        duration: exit.duration,
        timedOut: exit.timedOut,
        stdoutTruncated: out.stdout.truncated,
        stderrTruncated: out.stderr.truncated,
      };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    /** Runs to completion (or the timeout) and answers the Exec result. A client that leaves kills the command. */
    run(actor: Actor, id: string, input: ExecInput, signal?: AbortSignal): Promise<ExecResult> {
      return withExecSlot(actor, () => runCommand(actor, id, input, signal));
    },

    /**
     * Checks quotas, access and state now (errors are ordinary responses), then yields, as they are
     * read: `stdout`/`stderr` events as output arrives, then one `exit` or `error` event. When `signal`
     * aborts (client gone, shutdown) the command's process group is killed. Holds an exec slot until
     * the command is gone and a stream slot until `signal` aborts (429 first when either is full).
     */
    async stream(actor: Actor, id: string, input: ExecInput, signal: AbortSignal): Promise<AsyncIterable<SseEvent>> {
      const execSlot = deps.quotas.take(actor, 'execs');
      try {
        return await deps.quotas.holdingStream(actor, signal, async () => {
          const containerId = await runningContainer(actor, id);
          const started = performance.now();
          return streamOutput(containerId, input, signal, () => {
            execSlot.release();
            deps.onExecEnd?.(actor, id, performance.now() - started);
          });
        });
      } catch (e) {
        execSlot.release();
        throw e;
      }
    },

    /**
     * Runs `op` (a helper in the container run for an agent's tool: a file read, write or listing)
     * holding one of the actor's exec slots, as a command would.
     */
    withExecSlot,

    /** Exec processes Keel is waiting on. */
    get active() {
      return active;
    },
  };
}

export type ExecService = ReturnType<typeof createExecService>;
