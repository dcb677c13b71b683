// Command execution in a running workspace: `sh -c` with a workdir, env and timeout. A small wrapper
// reports the command's pid first (an engine exec process leads its own process group), so at the
// timeout, or when the client goes away, Keel kills the whole group through a second exec.
import { AppError, toEnvelope } from '../../../platform/errors';
import type { SseSink } from '../../../platform/http/sse';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { ExecHandle, LogsExecEngine, StdStream } from '../engine/docker';
import { EXEC_OUTPUT_MAX_BYTES, EXEC_TIMEOUT_DEFAULT_MS, EXIT_TIMED_OUT, type ExecExit, type ExecInput, type ExecResult } from './exec.model';
import type { OwnedWorkspaces } from '../logs/logs.service';
import { engineFailure } from '../lifecycle/lifecycle.service';

const MARK_PID = '\x1ekeel-pid ';
const MARK_NO_WORKDIR = '\x1ekeel-no-workdir';

/**
 * $1 = workdir ('' = the container's), $2 = command. Changes directory, reports the pid on the first
 * stderr line, then becomes the command's shell (same pid, same process group).
 */
const WRAPPER =
  `if [ -n "$1" ] && ! cd -- "$1" 2>/dev/null; then printf '\\036keel-no-workdir\\n' >&2; exit 126; fi; ` +
  `printf '\\036keel-pid %s\\n' "$$" >&2; exec sh -c "$2"`;

/** Bytes kept per stream; beyond it the rest is read and dropped (the process is never blocked). */
class Capped {
  private parts: Uint8Array[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly max: number) {}
  push(b: Uint8Array) {
    const room = this.max - this.size;
    if (b.byteLength > room) {
      this.truncated = true;
      if (room > 0) this.parts.push(b.subarray(0, room));
      this.size = this.max;
      return;
    }
    this.parts.push(b);
    this.size += b.byteLength;
  }
  /** UTF-8 text; invalid sequences (binary output, a cut multi-byte character) become U+FFFD. */
  text() {
    return new TextDecoder('utf-8').decode(Buffer.concat(this.parts));
  }
}

interface Running {
  /** Settles with the exit once the process ended, or at once with 124 at the timeout. */
  exit: Promise<ExecExit>;
  /** Kills the process group (client gone); nothing once the process has ended. */
  kill(): Promise<void>;
  pause(): void;
  resume(): void;
}

export function createExecService(deps: { engine: LogsExecEngine; workspaces: OwnedWorkspaces }) {
  const { engine } = deps;
  let active = 0;

  async function runningContainer(actor: Actor, id: string): Promise<string> {
    const ws = await deps.workspaces.getOwned(actor, id);
    if (ws.status !== 'running' || !ws.containerId) {
      throw new AppError('WORKSPACE_NOT_RUNNING', 409, `the workspace is ${ws.status}; start it to run commands`, { details: { status: ws.status } });
    }
    return ws.containerId;
  }

  /** Starts the command; `onOutput` sees the command's own bytes (the wrapper's pid line removed). */
  async function launch(containerId: string, input: ExecInput, onOutput: (s: StdStream, b: Uint8Array) => void): Promise<Running> {
    const started = performance.now();
    let pid: number | undefined;
    let noWorkdir = false;
    let preamble = '';
    let killed: Promise<void> | undefined;
    let handle: ExecHandle | undefined;

    let ended = false;
    // pid > 1 always holds for a real report; the guard keeps `kill -1` (every process) impossible.
    const killGroup = () => (killed ??= !ended && pid !== undefined && pid > 1 ? engine.killProcessGroup(containerId, pid) : Promise.resolve());

    const onChunk = (s: StdStream, b: Uint8Array) => {
      if (s === 'stderr' && pid === undefined && !noWorkdir) {
        // The first stderr line is the wrapper's: the pid, or the missing workdir.
        preamble += Buffer.from(b).toString('latin1');
        const nl = preamble.indexOf('\n');
        if (nl < 0) return;
        const first = preamble.slice(0, nl);
        if (first.startsWith(MARK_NO_WORKDIR)) noWorkdir = true;
        else pid = Number(first.slice(MARK_PID.length)) || -1;
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
      const code = (e as { statusCode?: number }).statusCode;
      if (code === 409 || code === 404) throw new AppError('WORKSPACE_NOT_RUNNING', 409, 'the workspace is not running; start it to run commands', { details: {} });
      throw engineFailure(e);
    }
    const h = handle;
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
      if (noWorkdir) throw new AppError('INVALID_REQUEST', 400, 'workdir does not exist in the workspace', { details: { field: 'workdir' } });
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

  return {
    /** Runs to completion (or the timeout) and answers the Exec result. A client that leaves kills the command. */
    async run(actor: Actor, id: string, input: ExecInput, signal?: AbortSignal): Promise<ExecResult> {
      const containerId = await runningContainer(actor, id);
      const out = { stdout: new Capped(EXEC_OUTPUT_MAX_BYTES), stderr: new Capped(EXEC_OUTPUT_MAX_BYTES) };
      const r = await launch(containerId, input, (s, b) => out[s].push(b));
      const onAbort = () => void r.kill();
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const exit = await r.exit;
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
    },

    /**
     * Checks access and state now (errors are ordinary responses), then streams once the SSE response
     * is open: `stdout`/`stderr` events as output arrives, then one `exit` or `error` event.
     */
    async stream(actor: Actor, id: string, input: ExecInput): Promise<(sink: SseSink) => Promise<() => void>> {
      const containerId = await runningContainer(actor, id);
      return async (sink) => {
        const dec = { stdout: new TextDecoder(), stderr: new TextDecoder() };
        let r: Running | undefined;
        // A slow client holds the engine stream back (the command blocks on write) instead of growing memory.
        let paused = false;
        const poll = setInterval(() => {
          if (paused && sink.backlog < 64 * 1024) {
            paused = false;
            r?.resume();
          }
        }, 50);
        const send = (s: StdStream, b: Uint8Array) => {
          const text = dec[s].decode(b, { stream: true });
          if (text) sink.send({ data: text }, s);
          if (!paused && sink.backlog > 1024 * 1024) {
            paused = true;
            r?.pause();
          }
        };
        try {
          r = await launch(containerId, input, send);
        } catch (e) {
          // The stream is open (e.g. the container stopped in between): its last event says why.
          clearInterval(poll);
          sink.send(toEnvelope(engineFailure(e)), 'error');
          sink.close();
          return () => {};
        }
        const running = r;
        r.exit.then(
          (exit) => {
            for (const s of ['stdout', 'stderr'] as const) {
              const tail = dec[s].decode();
              if (tail) sink.send({ data: tail }, s);
            }
            sink.send(exit, 'exit');
            sink.close();
          },
          (e) => {
            sink.send(toEnvelope(engineFailure(e)), 'error');
            sink.close();
          },
        );
        return () => {
          clearInterval(poll);
          void running.kill();
        };
      };
    },

    /** Exec processes Keel is waiting on. */
    get active() {
      return active;
    },
  };
}

export type ExecService = ReturnType<typeof createExecService>;
