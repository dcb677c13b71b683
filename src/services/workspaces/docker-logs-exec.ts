// Logs and exec
// Engine calls for workspace logs and command execution. The engine multiplexes stdout and stderr
// of a container without a TTY into frames (1 byte stream, 3 zero bytes, 4 bytes big-endian size);
// frameSplitter undoes that so each caller sees whole chunks per stream.
import type Docker from 'dockerode';

export type StdStream = 'stdout' | 'stderr';

export interface LogStreamHandle {
  /** Resolves when the engine ends the stream (container stopped or removed) or close() was called. */
  done: Promise<void>;
  close(): void;
}

export interface ExecHandle {
  /** Resolves when the exec's output ends. */
  done: Promise<void>;
  /** Stops reading (output after this is discarded); the process itself is not touched. */
  close(): void;
  pause(): void;
  resume(): void;
  /** Exit code once the process has ended; null while it runs. */
  exitCode(): Promise<number | null>;
}

/** Splits the engine's multiplexed byte stream into (stream, bytes) chunks. Raw (TTY) output is stdout. */
export function frameSplitter(onChunk: (stream: StdStream, bytes: Uint8Array) => void) {
  let pending: Buffer = Buffer.alloc(0);
  let raw: boolean | undefined;
  return (data: Buffer) => {
    if (raw === undefined && data.length > 0) raw = !(data[0]! <= 2 && data.length >= 4 && data[1] === 0 && data[2] === 0 && data[3] === 0);
    if (raw) return onChunk('stdout', data);
    pending = pending.length ? Buffer.concat([pending, data]) : data;
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const kind = pending[0] === 2 ? 'stderr' : 'stdout';
      onChunk(kind, pending.subarray(8, 8 + size));
      pending = pending.subarray(8 + size);
    }
  };
}

/** Calls onLine for each complete line of each stream; a last unterminated line is flushed at the end. */
export function lineSplitter(onLine: (stream: StdStream, line: string) => void) {
  const rest: Record<StdStream, string> = { stdout: '', stderr: '' };
  const dec: Record<StdStream, TextDecoder> = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  return {
    push(stream: StdStream, bytes: Uint8Array) {
      const text = rest[stream] + dec[stream].decode(bytes, { stream: true });
      const parts = text.split('\n');
      rest[stream] = parts.pop()!;
      for (const p of parts) onLine(stream, p);
    },
    flush() {
      for (const s of ['stdout', 'stderr'] as const) {
        const last = rest[s] + dec[s].decode();
        rest[s] = '';
        if (last) onLine(s, last);
      }
    },
  };
}

export function logsExecEngine(docker: Docker) {
  let openStreams = 0;

  return {
    /** Engine log streams Keel holds open right now (followers' shared streams and snapshot reads). */
    get openLogStreams() {
      return openStreams;
    },

    /**
     * Reads a container's log with engine timestamps ("<RFC 3339 ns> <text>" per line).
     * follow=false reads what exists and ends; follow=true stays open until close() or the container stops.
     */
    async logStream(
      containerId: string,
      opts: { follow: boolean; tail: number | 'all'; sinceSeconds?: number },
      onLine: (stream: StdStream, line: string) => void,
    ): Promise<LogStreamHandle> {
      const abort = new AbortController();
      const res = (await docker.getContainer(containerId).logs({
        follow: opts.follow as true,
        stdout: true,
        stderr: true,
        timestamps: true,
        tail: opts.tail === 'all' ? undefined : opts.tail,
        since: opts.sinceSeconds,
        abortSignal: abort.signal,
      } as any)) as unknown as NodeJS.ReadableStream | Buffer;
      const lines = lineSplitter(onLine);
      const split = frameSplitter((s, b) => lines.push(s, b));
      if (Buffer.isBuffer(res)) {
        split(res);
        lines.flush();
        return { done: Promise.resolve(), close() {} };
      }
      openStreams++;
      const stream = res as NodeJS.ReadableStream & { destroy(): void };
      let ended = false;
      const done = new Promise<void>((resolve) => {
        const end = () => {
          if (ended) return;
          ended = true;
          openStreams--;
          lines.flush();
          resolve();
        };
        stream.on('data', (b: Buffer) => split(b));
        stream.on('end', end);
        stream.on('close', end);
        stream.on('error', end);
      });
      return {
        done,
        close() {
          if (ended) return;
          stream.destroy();
          abort.abort();
        },
      };
    },

    /** Starts a process in the container and streams its output (chunks per stream) to onChunk. */
    async execStart(
      containerId: string,
      opts: { cmd: string[]; env?: string[] },
      onChunk: (stream: StdStream, bytes: Uint8Array) => void,
    ): Promise<ExecHandle> {
      const exec = await docker.getContainer(containerId).exec({ Cmd: opts.cmd, Env: opts.env, AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false });
      const stream = (await exec.start({ hijack: true, stdin: false })) as NodeJS.ReadableStream & { destroy(): void; pause(): void; resume(): void };
      const split = frameSplitter(onChunk);
      let ended = false;
      const done = new Promise<void>((resolve) => {
        const end = () => {
          ended = true;
          resolve();
        };
        stream.on('data', (b: Buffer) => {
          if (!ended) split(b);
        });
        stream.on('end', end);
        stream.on('close', end);
        stream.on('error', end);
      });
      return {
        done,
        close() {
          ended = true;
          stream.destroy();
        },
        pause: () => stream.pause(),
        resume: () => stream.resume(),
        async exitCode() {
          const info = await exec.inspect();
          return info.Running ? null : info.ExitCode ?? null;
        },
      };
    },

    /** Runs a short helper command (kill, ps) to completion and returns its output. */
    async execCollect(containerId: string, cmd: string[]): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
      const out = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
      const h = await this.execStart(containerId, { cmd }, (s, b) => out[s].push(b));
      await h.done;
      const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('utf8');
      return { exitCode: await h.exitCode(), stdout: text(out.stdout), stderr: text(out.stderr) };
    },

    /** Kills a process group inside the container (the exec'd command and everything it started). */
    async killProcessGroup(containerId: string, pid: number): Promise<void> {
      await this.execCollect(containerId, ['kill', '-KILL', `-${pid}`, `${pid}`]).catch(() => undefined);
    },

    /** Whether the container runs; null when the engine does not know it. */
    async containerRunning(containerId: string): Promise<boolean | null> {
      try {
        const info = await docker.getContainer(containerId).inspect();
        return info.State.Running === true;
      } catch (e) {
        if ((e as { statusCode?: number }).statusCode === 404) return null;
        throw e;
      }
    },
  };
}

export type LogsExecEngine = ReturnType<typeof logsExecEngine>;
