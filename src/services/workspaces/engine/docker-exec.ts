// The exec calls of the Docker engine (engine/engine.ts documents each): commands run in a
// container, their output demultiplexed. Kept apart from docker.ts only for size; it takes
// docker.ts's dockerode client.
import type { DockerClient } from './docker';
import { settledExitCode, type Engine, type ExecHandle, type StdStream } from './engine';
import { call, streamEnd } from './docker-calls';
import { frameSplitter } from './frames';
import { socketWriter } from './socket-writer';

type ExecCalls = Pick<Engine, 'execStart' | 'execCollect' | 'killProcessGroup'>;

/** Output bytes (both streams together) execCollect keeps by default: its helpers (kill, du, rm) print a line. */
export const COLLECT_MAX_BYTES = 64 * 1024;
/**
 * $@ = the command. Reports its pid on stderr first (an exec's process leads its own process group),
 * then becomes the command (same pid, same group, its exit code).
 */
const COLLECT_WRAPPER = `printf '%s\\n' "$$" >&2; exec "$@"`;

export function execCalls(docker: DockerClient): ExecCalls {
  async function execStart(
    containerId: string,
    opts: { cmd: string[]; env?: string[]; stdin?: boolean },
    onChunk: (stream: StdStream, bytes: Uint8Array) => void,
  ): Promise<ExecHandle> {
    const withStdin = opts.stdin === true;
    const spec = { Cmd: opts.cmd, Env: opts.env, AttachStdout: true, AttachStderr: true, AttachStdin: withStdin, Tty: false };
    const exec = await call(() => docker.getContainer(containerId).exec(spec));
    const stream = (await call(() => exec.start({ hijack: true, stdin: withStdin }))) as NodeJS.ReadWriteStream & { destroy(): void; pause(): void; resume(): void };
    const split = frameSplitter(onChunk);
    // Set by close() too: output after it is discarded.
    let ended = false;
    stream.on('data', (b: Buffer) => {
      if (!ended) split(b);
    });
    const done = streamEnd(stream, () => (ended = true));
    return {
      done,
      close() {
        ended = true;
        stream.destroy();
      },
      pause: () => stream.pause(),
      resume: () => stream.resume(),
      async exitCode() {
        const info = await call(() => exec.inspect());
        return info.Running ? null : info.ExitCode ?? null;
      },
      ...(withStdin ? { stdin: socketWriter(stream) } : {}),
    };
  }


  async function execCollect(containerId: string, cmd: string[], maxBytes = COLLECT_MAX_BYTES): Promise<{ exitCode: number | null; stdout: string; stderr: string; truncated: boolean }> {
    const out = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
    let held = 0;
    let truncated = false;
    let pid: number | undefined;
    let preamble = '';
    let h: ExecHandle | undefined;
    // Bounded at the stream: past maxBytes nothing more is kept, the exec is closed and its process
    // group killed (a closed exec's process is not ended by the engine: it would block on its full
    // pipe for ever). The pid comes first on stderr, but the engine may pass stdout on before it: a
    // bound reached without the pid reads on, keeping nothing, until the pid comes, then kills and
    // closes (closing first would discard the pid and leave the command flooding).
    const stop = () => {
      if (pid === undefined) return;
      h?.close();
      if (pid > 1) void killProcessGroup(containerId, pid);
    };
    h = await execStart(containerId, { cmd: ['sh', '-c', COLLECT_WRAPPER, 'keel-collect', ...cmd] }, (s, b) => {
      if (s === 'stderr' && pid === undefined) {
        preamble += Buffer.from(b).toString('latin1');
        const nl = preamble.indexOf('\n');
        if (nl < 0) return;
        pid = Number(preamble.slice(0, nl)) || -1;
        if (truncated) return stop();
        b = Buffer.from(preamble.slice(nl + 1), 'latin1');
        if (!b.byteLength) return;
      }
      if (truncated) return;
      const room = maxBytes - held;
      if (b.byteLength > room) {
        truncated = true;
        out[s].push(b.subarray(0, room));
        return stop();
      }
      out[s].push(b);
      held += b.byteLength;
    });
    if (truncated) stop();
    await h.done;
    const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('utf8');
    return { exitCode: truncated ? null : await settledExitCode(h), stdout: text(out.stdout), stderr: text(out.stderr), truncated };
  }

  async function killProcessGroup(containerId: string, pid: number): Promise<void> {
    await execCollect(containerId, ['kill', '-KILL', `-${pid}`, `${pid}`]).catch(() => undefined);
  }

  return {
    execStart,
    execCollect,
    killProcessGroup,
  };
}
