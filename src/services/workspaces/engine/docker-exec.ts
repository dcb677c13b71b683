// The exec calls of the Docker engine (engine/engine.ts documents each): commands run in a
// container, their output demultiplexed. Kept apart from docker.ts only for size; it takes
// docker.ts's dockerode client.
import type { DockerClient } from './docker';
import type { Engine, ExecHandle, StdStream } from './engine';
import { call, streamEnd } from './docker-calls';
import { frameSplitter } from './frames';
import { socketWriter } from './socket-writer';

type ExecCalls = Pick<Engine, 'execStart' | 'execCollect' | 'killProcessGroup'>;

/** Output bytes (both streams together) execCollect keeps by default: its helpers (kill, du, rm) print a line. */
export const COLLECT_MAX_BYTES = 64 * 1024;

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
    // Bounded at the stream: past maxBytes the exec is closed (the process then writes into a closed
    // pipe) and nothing more is kept, so a helper that floods its output costs Keel maxBytes at most.
    let h: ExecHandle | undefined;
    h = await execStart(containerId, { cmd }, (s, b) => {
      if (truncated) return;
      const room = maxBytes - held;
      if (b.byteLength > room) {
        truncated = true;
        out[s].push(b.subarray(0, room));
        h?.close();
        return;
      }
      out[s].push(b);
      held += b.byteLength;
    });
    if (truncated) h.close();
    await h.done;
    const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('utf8');
    return { exitCode: truncated ? null : await h.exitCode(), stdout: text(out.stdout), stderr: text(out.stderr), truncated };
  }

  return {
    execStart,
    execCollect,
    async killProcessGroup(containerId: string, pid: number): Promise<void> {
      await execCollect(containerId, ['kill', '-KILL', `-${pid}`, `${pid}`]).catch(() => undefined);
    },
  };
}
