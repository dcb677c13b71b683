// A terminal's engine exec: `docker exec` with a TTY (one raw byte stream, no stdout/stderr framing),
// stdin hijacked, resized through the exec's own resize call.
import type { DockerClient } from './docker';
import { call, streamEnd } from './docker-calls';
import type { TtyHandle } from './engine';
import { socketWriter } from './socket-writer';

type Exec = Awaited<ReturnType<ReturnType<DockerClient['getContainer']>['exec']>>;
type ExecSpec = Parameters<ReturnType<DockerClient['getContainer']>['exec']>[0];
type ExecStart = Parameters<Exec['start']>[0];

export async function execTty(
  docker: DockerClient,
  containerId: string,
  opts: { cmd: string[]; env?: string[]; cols: number; rows: number },
  onData: (bytes: Uint8Array) => void,
): Promise<TtyHandle> {
  const spec = { Cmd: opts.cmd, Env: opts.env, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: true, ConsoleSize: [opts.rows, opts.cols] };
  const exec = await call(() => docker.getContainer(containerId).exec(spec as ExecSpec));
  const stream = (await call(() => exec.start({ hijack: true, stdin: true, Tty: true } as ExecStart))) as NodeJS.ReadWriteStream & { destroy(): void; destroyed?: boolean };
  let ended = false;
  stream.on('data', (b: Buffer) => {
    if (!ended) onData(b);
  });
  const done = streamEnd(stream, () => (ended = true));
  // The size asked at create is not applied by every engine version: it is set again once started.
  await call(() => exec.resize({ w: opts.cols, h: opts.rows })).catch(() => undefined);
  const input = socketWriter(stream);
  return {
    done,
    write: (bytes) => input.write(bytes),
    // Some engines refuse a resize before the process has its TTY: the next resize will do.
    resize: (cols, rows) => call(() => exec.resize({ w: cols, h: rows })).then(() => undefined),
    close() {
      ended = true;
      stream.destroy();
    },
  };
}
