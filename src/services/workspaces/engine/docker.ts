// The Docker engine behind one small wrapper: the only file that imports dockerode. Everything the
// workspaces service asks of the engine is a function here, with engine errors turned into EngineError.
import Docker from 'dockerode';
import { PassThrough, type Readable } from 'node:stream';

export const LABEL_MANAGED = 'dev.keel.managed';
export const LABEL_WORKSPACE = 'dev.keel.workspace';
export const LABEL_OWNER = 'dev.keel.owner';
export const LABEL_INSTANCE = 'dev.keel.instance';
export const LABEL_TEMPLATE = 'dev.keel.template';

/** An engine failure with the engine's own message (never a stack) and its HTTP status when it had one. */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

function engineError(e: unknown): EngineError {
  if (e instanceof EngineError) return e;
  const err = e as { statusCode?: number; json?: { message?: string }; reason?: string; message?: string };
  const msg = err?.json?.message ?? err?.message ?? String(e);
  return new EngineError(msg.replace(/^\(HTTP code \d+\)\s*/, '').trim(), err?.statusCode);
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw engineError(e);
  }
}

/**
 * Like call, but the engine answering `status` yields `fallback`: 404 is an absent object, 304 a
 * container already in the asked state, 409 a kill of a container that does not run.
 */
async function callOr<T, F>(status: number, fallback: F, fn: () => Promise<T>): Promise<T | F> {
  try {
    return await fn();
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === status) return fallback;
    throw engineError(e);
  }
}

export interface ContainerSpec {
  name: string;
  image: string;
  cmd: string[];
  user: string;
  workdir: string;
  env: Record<string, string>;
  hostname: string;
  labels: Record<string, string>;
  volume: string;
  mountPath: string;
  /** container port -> host port, published on bindAddress. */
  ports: { container: number; host: number }[];
  bindAddress: string;
  memoryBytes: number;
  nanoCpus: number;
  pids: number;
}

export interface ContainerState {
  running: boolean;
  exitCode: number;
  oomKilled: boolean;
  error: string;
}

export interface ManagedContainer {
  id: string;
  workspaceId: string;
}

export interface RawStats {
  memoryUsed: number;
  memoryLimit: number;
  /** Raw counters, kept by the caller to compute the next CPU percentage. */
  cpuTotal: number;
  systemTotal: number;
  onlineCpus: number;
}

export interface EngineEvent {
  action: string;
  workspaceId: string;
}

export type Engine = ReturnType<typeof createEngine>;

/** DOCKER_HOST as dockerode wants it: unix:// socket or tcp:// address; unset means the engine default. */
function connection(dockerHost: string | undefined): Docker.DockerOptions | undefined {
  if (!dockerHost) return undefined;
  if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) };
  const m = /^(?:tcp|http):\/\/([^:/]+):(\d+)\/?$/.exec(dockerHost);
  if (m) return { host: m[1], port: Number(m[2]), protocol: 'http' };
  return undefined;
}

const clients = new WeakMap<object, Docker>();

/** The dockerode client behind an engine, so logs and exec (below) share it. */
function dockerOf(engine: Engine): Docker {
  const d = clients.get(engine);
  if (!d) throw new Error('not an engine made by createEngine');
  return d;
}

export function createEngine(dockerHost?: string) {
  const docker = new Docker(connection(dockerHost));

  const drain = (stream: Readable) =>
    new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(stream, (err: Error | null, out: { error?: string; errorDetail?: { message?: string } }[]) => {
        const failed = out?.find((o) => o.error || o.errorDetail);
        if (err) reject(engineError(err));
        else if (failed) reject(new EngineError(failed.errorDetail?.message ?? failed.error ?? 'engine error'));
        else resolve();
      });
    });

  const engine = {
    imageExists(ref: string): Promise<boolean> {
      return callOr(404, false, () => docker.getImage(ref).inspect().then(() => true));
    },

    async pullImage(ref: string): Promise<void> {
      const stream = await call(() => docker.pull(ref) as Promise<Readable>);
      await drain(stream);
    },

    /** `docker import` of a root filesystem tar, with Dockerfile-style `changes` (USER, WORKDIR, ...). */
    async importImage(tar: Buffer, ref: string, changes: string[]): Promise<void> {
      const [repo, tag] = ref.split(':');
      const src = new PassThrough();
      src.end(tar);
      const stream = await call(() => docker.importImage(src, { repo, tag: tag ?? 'latest', changes } as object) as Promise<Readable>);
      await drain(stream);
    },

    /** `docker build` of a context tar with a Dockerfile at its root, tagged `ref`. */
    async buildImage(context: Buffer, ref: string): Promise<void> {
      const src = new PassThrough();
      src.end(context);
      const stream = await call(() => docker.buildImage(src as unknown as NodeJS.ReadableStream, { t: ref }) as Promise<Readable>);
      await drain(stream);
    },

    async createVolume(name: string, labels: Record<string, string>): Promise<void> {
      await call(() => docker.createVolume({ Name: name, Labels: labels }));
    },

    /** Removes a volume; an absent one is fine. */
    async removeVolume(name: string): Promise<void> {
      await callOr(404, undefined, () => docker.getVolume(name).remove());
    },

    /** Creates (does not start) a least-privilege container: no capabilities, no new privileges, limits, init. */
    async createContainer(spec: ContainerSpec): Promise<string> {
      const exposed: Record<string, object> = {};
      const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
      for (const p of spec.ports) {
        exposed[`${p.container}/tcp`] = {};
        bindings[`${p.container}/tcp`] = [{ HostIp: spec.bindAddress, HostPort: String(p.host) }];
      }
      const c = await call(() =>
        docker.createContainer({
          name: spec.name,
          Image: spec.image,
          Cmd: spec.cmd,
          User: spec.user,
          WorkingDir: spec.workdir,
          Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
          Hostname: spec.hostname,
          Labels: spec.labels,
          ExposedPorts: exposed,
          HostConfig: {
            Init: true,
            Privileged: false,
            CapDrop: ['ALL'],
            SecurityOpt: ['no-new-privileges:true'],
            Memory: spec.memoryBytes,
            MemorySwap: spec.memoryBytes,
            NanoCpus: spec.nanoCpus,
            PidsLimit: spec.pids,
            Mounts: [{ Type: 'volume', Source: spec.volume, Target: spec.mountPath }],
            PortBindings: bindings,
            RestartPolicy: { Name: 'no' },
          },
        }),
      );
      return c.id;
    },

    /** Copies a tar stream into the container's filesystem (volumes included), created or running. */
    async putArchive(id: string, path: string, tar: Readable): Promise<void> {
      await call(() => docker.getContainer(id).putArchive(tar, { path }));
    },

    /** Starts a container; one already running is fine. */
    async start(id: string): Promise<void> {
      await callOr(304, undefined, () => docker.getContainer(id).start());
    },

    /** SIGTERM, then SIGKILL after `graceSeconds`; a container already stopped is fine. */
    async stop(id: string, graceSeconds: number): Promise<void> {
      await callOr(304, undefined, () => docker.getContainer(id).stop({ t: graceSeconds }));
    },

    /** SIGKILL; a container that does not run is fine. */
    async kill(id: string): Promise<void> {
      await callOr(409, undefined, () => docker.getContainer(id).kill({ signal: 'SIGKILL' }));
    },

    async restart(id: string, graceSeconds: number): Promise<void> {
      await call(() => docker.getContainer(id).restart({ t: graceSeconds }));
    },

    /** Removes a container (running or not) and its anonymous volumes; an absent one is fine. */
    async remove(id: string): Promise<void> {
      await callOr(404, undefined, () => docker.getContainer(id).remove({ force: true, v: true }));
    },

    /** The container's state, or null when the engine has no such container. */
    async inspect(id: string): Promise<ContainerState | null> {
      const info = await callOr(404, null, () => docker.getContainer(id).inspect());
      if (!info) return null;
      return {
        running: info.State.Running && !info.State.Restarting,
        exitCode: info.State.ExitCode,
        oomKilled: info.State.OOMKilled,
        error: info.State.Error ?? '',
      };
    },

    /** Containers carrying the managed label and this instance's label. */
    async listManaged(instance: string): Promise<ManagedContainer[]> {
      const label = [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`];
      const list = await call(() => docker.listContainers({ all: true, filters: { label } }));
      return list.map((c) => ({ id: c.Id, workspaceId: c.Labels[LABEL_WORKSPACE] ?? '' }));
    },

    /** One sample of the container's counters (no two-sample wait: the caller keeps the previous one). */
    async stats(id: string): Promise<RawStats> {
      const s = (await call(() => docker.getContainer(id).stats({ stream: false, 'one-shot': true } as { stream: false }))) as Docker.ContainerStats;
      const cache = (s.memory_stats.stats as Record<string, number> | undefined)?.total_inactive_file ?? (s.memory_stats.stats as Record<string, number> | undefined)?.inactive_file ?? 0;
      return {
        memoryUsed: Math.max(0, (s.memory_stats.usage ?? 0) - cache),
        memoryLimit: s.memory_stats.limit ?? 0,
        cpuTotal: s.cpu_stats.cpu_usage.total_usage,
        systemTotal: s.cpu_stats.system_cpu_usage ?? 0,
        onlineCpus: s.cpu_stats.online_cpus ?? s.cpu_stats.cpu_usage.percpu_usage?.length ?? 1,
      };
    },

    /**
     * Follows the engine's container events for managed containers of `instance`. Reconnects after a
     * broken stream and calls `onGap` then, since events may have been missed.
     */
    watchEvents(instance: string, onEvent: (e: EngineEvent) => void, onGap: () => void): { stop(): void } {
      let stopped = false;
      let current: Readable | undefined;
      const connect = async () => {
        // Back off while the engine is unreachable, so a long outage is not a busy loop of retries.
        let delayMs = 1000;
        while (!stopped) {
          try {
            const stream = (await docker.getEvents({
              filters: { type: ['container'], label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`] },
            })) as unknown as Readable;
            if (stopped) {
              stream.destroy();
              return;
            }
            current = stream;
            delayMs = 1000;
            let buf = '';
            await new Promise<void>((resolve) => {
              stream.on('data', (chunk: Buffer) => {
                buf += chunk.toString('utf8');
                let nl: number;
                while ((nl = buf.indexOf('\n')) >= 0) {
                  const line = buf.slice(0, nl).trim();
                  buf = buf.slice(nl + 1);
                  if (!line) continue;
                  try {
                    const e = JSON.parse(line) as { Action?: string; status?: string; Actor?: { Attributes?: Record<string, string> } };
                    const workspaceId = e.Actor?.Attributes?.[LABEL_WORKSPACE];
                    if (workspaceId) onEvent({ action: e.Action ?? e.status ?? '', workspaceId });
                  } catch {
                    // A line that is not JSON is not an event.
                  }
                }
              });
              stream.on('end', resolve);
              stream.on('close', resolve);
              stream.on('error', () => resolve());
            });
          } catch {
            // Engine unreachable: retry below.
          }
          if (stopped) return;
          await Bun.sleep(delayMs);
          delayMs = Math.min(delayMs * 2, 30_000);
          if (!stopped) onGap();
        }
      };
      void connect();
      return {
        stop() {
          stopped = true;
          current?.destroy();
        },
      };
    },
  };
  clients.set(engine, docker);
  return engine;
}

// Logs and exec
// Engine calls for workspace logs and command execution. The engine multiplexes stdout and stderr
// of a container without a TTY into frames (1 byte stream, 3 zero bytes, 4 bytes big-endian size);
// frameSplitter undoes that so each caller sees whole chunks per stream.
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

/**
 * Splits the engine's multiplexed byte stream into (stream, bytes) chunks, one per engine frame.
 * Raw (TTY) output is stdout, with `framed` false: its chunks have no message boundaries.
 */
export function frameSplitter(onChunk: (stream: StdStream, bytes: Uint8Array, framed: boolean) => void) {
  let pending: Buffer = Buffer.alloc(0);
  let raw: boolean | undefined;
  return (data: Buffer) => {
    if (raw === undefined && data.length > 0) raw = !(data[0]! <= 2 && data.length >= 4 && data[1] === 0 && data[2] === 0 && data[3] === 0);
    if (raw) return onChunk('stdout', data, false);
    pending = pending.length ? Buffer.concat([pending, data]) : data;
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const kind = pending[0] === 2 ? 'stderr' : 'stdout';
      onChunk(kind, pending.subarray(8, 8 + size), true);
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

/**
 * Rebuilds log lines from the engine's log frames (one frame per log message, "<ts> <text>"). The
 * engine splits a line longer than 16 KiB into partial messages without a newline, each with its
 * own timestamp: the pieces are joined under the first piece's timestamp.
 */
export function logMessageJoiner(onLine: (stream: StdStream, line: string) => void) {
  const partial: Record<StdStream, string> = { stdout: '', stderr: '' };
  const dec: Record<StdStream, TextDecoder> = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  return {
    push(stream: StdStream, bytes: Uint8Array) {
      let text = dec[stream].decode(bytes, { stream: true });
      if (partial[stream]) text = text.replace(/^\S+ /, '');
      text = partial[stream] + text;
      if (!text.endsWith('\n')) {
        partial[stream] = text;
        return;
      }
      partial[stream] = '';
      for (const line of text.slice(0, -1).split('\n')) onLine(stream, line);
    },
    flush() {
      for (const s of ['stdout', 'stderr'] as const) {
        const last = partial[s] + dec[s].decode();
        partial[s] = '';
        if (last) onLine(s, last);
      }
    },
  };
}

/** Resolves when the stream ends, closes or fails (whichever comes first), after `onEnd` ran once. */
function streamEnd(stream: NodeJS.ReadableStream, onEnd: () => void): Promise<void> {
  return new Promise((resolve) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      onEnd();
      resolve();
    };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', end);
  });
}

export function logsExecEngine(engine: Engine) {
  const docker = dockerOf(engine);
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
      const messages = logMessageJoiner(onLine);
      const split = frameSplitter((s, b, framed) => (framed ? messages.push(s, b) : lines.push(s, b)));
      if (Buffer.isBuffer(res)) {
        split(res);
        messages.flush();
        lines.flush();
        return { done: Promise.resolve(), close() {} };
      }
      openStreams++;
      const stream = res as NodeJS.ReadableStream & { destroy(): void };
      let ended = false;
      stream.on('data', (b: Buffer) => split(b));
      const done = streamEnd(stream, () => {
        ended = true;
        openStreams--;
        messages.flush();
        lines.flush();
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
