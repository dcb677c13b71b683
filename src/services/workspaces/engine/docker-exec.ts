// The exec calls of the Docker engine (engine/engine.ts documents each): commands run in a
// container, their output demultiplexed. Kept apart from docker.ts only for size; it takes
// docker.ts's dockerode client.
import type { DockerClient } from './docker';
import type { Engine, ExecHandle, StdStream } from './engine';
import { collector } from './exec-collect';
import { call, streamEnd } from './docker-calls';
import { frameSplitter } from './frames';
import { socketWriter } from './socket-writer';

type ExecCalls = Pick<Engine, 'execStart' | 'execCollect' | 'killProcessGroup'>;

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


  const execCollect = collector(execStart, killProcessGroup);

  async function killProcessGroup(containerId: string, pid: number): Promise<void> {
    await execCollect(containerId, ['kill', '-KILL', `-${pid}`, `${pid}`]).catch(() => undefined);
  }

  return {
    execStart,
    execCollect,
    killProcessGroup,
  };
}
