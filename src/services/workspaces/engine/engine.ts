// What the workspaces service asks of a container engine, in Keel's own shapes. engine/docker.ts is
// the one implementation (the only dockerode importer); features depend on this interface only.
import type { Readable } from 'node:stream';
import type { LogPiece } from './frames';

export const LABEL_MANAGED = 'dev.keel.managed';
export const LABEL_WORKSPACE = 'dev.keel.workspace';
export const LABEL_OWNER = 'dev.keel.owner';
export const LABEL_INSTANCE = 'dev.keel.instance';
export const LABEL_TEMPLATE = 'dev.keel.template';
export const LABEL_SNAPSHOT = 'dev.keel.snapshot';
/** On a warm pool entry (pool/pool.service.ts): its template. The entry keeps it after a claim (labels are fixed); the row says who owns it. */
export const LABEL_POOL = 'dev.keel.pool';

/**
 * Why an engine call failed, as far as callers care: `unavailable` (no engine answers), `not-found`
 * (no such object), `conflict` (the object's state or name forbids it), `refused` (any other answer
 * the engine gave to a request it would not do) and `failed` (the engine broke doing it).
 */
export type EngineErrorKind = 'unavailable' | 'not-found' | 'conflict' | 'refused' | 'failed';

/** The one error engine calls throw: the engine's own message (never a stack) and its kind. */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly kind: EngineErrorKind = 'failed',
  ) {
    super(message);
    this.name = 'EngineError';
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
  /** The workspace's own network (createNetwork): the container's only network. */
  network: string;
  /** json-file log rotation: the engine keeps at most maxFiles files of maxSize each (e.g. "10m"). */
  log: { maxSize: string; maxFiles: number };
  /** `--storage-opt size=` for the container's writable layer (only some storage drivers accept it); absent: none. */
  diskLimit?: string;
  /** Volumes mounted read-only besides the workspace's (keeld's, engine/with-daemon.ts). */
  readOnlyVolumes?: { name: string; target: string }[];
}

/** A user-defined bridge network with one IPv4 subnet. */
export interface NetworkSpec {
  name: string;
  labels: Record<string, string>;
  /** e.g. 10.213.0.16/28 */
  subnet: string;
  gateway: string;
}

export interface NetworkInfo {
  id: string;
  name: string;
  /** The Linux bridge interface behind it on the engine's host (br-<id12> unless named otherwise). */
  bridge: string;
  subnet: string;
  gateway: string;
  workspaceId: string;
}

export interface ContainerState {
  /** True for a paused container too (its processes exist, frozen); `paused` tells them apart. */
  running: boolean;
  paused: boolean;
  exitCode: number;
  oomKilled: boolean;
  error: string;
  /** Names of the networks the container is attached to. */
  networks: string[];
  /** Its IPv4 address on its network (previews reach its ports there); absent when it has none. */
  address?: string;
  /** Its labels (fixed at create). */
  labels?: Record<string, string>;
}

/** A container or volume carrying this Keel instance's labels; `id` is the volume name for volumes. */
export interface ManagedObject {
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

export type StdStream = 'stdout' | 'stderr';

export interface LogStreamHandle {
  /** Resolves when the engine ends the stream (container stopped or removed) or close() was called. */
  done: Promise<void>;
  close(): void;
  /** Stops reading from the engine (pieces of the chunk in hand still arrive) until resume(): a reader's backpressure. */
  pause(): void;
  resume(): void;
  /** Engine log messages read so far (the engine's `tail` counts these, a long line being several). */
  readonly messages: number;
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
  /** The process's stdin, when started with `stdin: true`: write waits while the engine is behind; end() closes it (EOF). */
  stdin?: { write(bytes: Uint8Array): Promise<void>; end(): void };
}

/** The exit code once the engine recorded it (the output can end a moment before); null if it never does. */
export async function settledExitCode(h: ExecHandle): Promise<number | null> {
  for (let i = 0; i < 50; i++) {
    const code = await h.exitCode().catch(() => -1);
    if (code !== null) return code;
    await Bun.sleep(10);
  }
  return null;
}

/** A process on a TTY (execTty): its bytes arrive raw, its window can be resized. */
export interface TtyHandle {
  /** Resolves when the process has ended (or close() was called). */
  done: Promise<void>;
  /** Writes to the TTY, waiting while the engine is behind. */
  write(bytes: Uint8Array): Promise<void>;
  resize(cols: number, rows: number): Promise<void>;
  /** Hangs up: the engine closes the TTY and its process gets SIGHUP. */
  close(): void;
}

export interface Engine {
  /** Resolves when the engine answers; EngineError `unavailable` when none does. */
  ping(): Promise<void>;
  /** The engine host's memory in bytes (placement over several engines weighs it). */
  memoryBytes(): Promise<number>;

  imageExists(ref: string): Promise<boolean>;
  pullImage(ref: string): Promise<void>;
  /** `docker import` of a root filesystem tar, with Dockerfile-style `changes` (USER, WORKDIR, ...). */
  importImage(tar: Buffer, ref: string, changes: string[]): Promise<void>;
  /** `docker build` of a context tar with a Dockerfile at its root, tagged `ref`. */
  buildImage(context: Buffer, ref: string): Promise<void>;
  /** A build whose output lines go to `onLine`, with no network for its steps; a failure names its step. */
  buildStreaming(context: Buffer, ref: string, opts: { onLine: (line: string) => void; signal: AbortSignal }): Promise<void>;
  /** An image's USER, WORKDIR, ENV, CMD and ENTRYPOINT; null when the engine has no such image. */
  /**
   * Small text files of an image (e.g. /etc/passwd), read through a container that is created, never
   * started, and removed; an absent file is null, a file past 1 MiB is cut there.
   */
  imageFiles(ref: string, paths: string[]): Promise<Record<string, string | null>>;
  imageConfig(ref: string): Promise<{ user: string; workdir: string; env: string[]; cmd: string[] | null; entrypoint: string[] | null } | null>;

  /**
   * Creates a volume; one that exists already is kept (the engine answers it as created). `sizeLimit`
   * (e.g. "10G") asks the local driver for a quota, which it enforces only on xfs with pquota.
   */
  createVolume(name: string, labels: Record<string, string>, sizeLimit?: string): Promise<void>;
  /** Removes a volume; an absent one is fine. */
  removeVolume(name: string): Promise<void>;
  /**
   * Unpacks `tar` (paths relative to the volume's root) into the volume `name`, made if absent, through
   * a container of `image` that is created, never started, and removed.
   */
  fillVolume(name: string, labels: Record<string, string>, image: string, tar: Buffer): Promise<void>;

  /**
   * Creates a bridge network. Its name taken answers EngineError `conflict`; a subnet that overlaps
   * another network's answers EngineError `refused` with "overlap" in the message.
   */
  createNetwork(spec: NetworkSpec): Promise<NetworkInfo>;
  /** The network by name or id, or null when the engine has none. */
  inspectNetwork(name: string): Promise<NetworkInfo | null>;
  /** Removes a network (its containers must be gone); an absent one is fine. */
  removeNetwork(name: string): Promise<void>;
  /** Networks carrying the managed label and `instance`'s label; `id` is the network name. */
  listManagedNetworks(instance: string): Promise<ManagedObject[]>;
  /** Every IPv4 subnet the engine's networks use, whoever made them (to pick a free one). */
  networkSubnets(): Promise<string[]>;

  /** Creates (does not start) a least-privilege container; its id. */
  createContainer(spec: ContainerSpec): Promise<string>;
  /** Copies a tar stream into the container's filesystem (volumes included), created or running. */
  putArchive(id: string, path: string, tar: Readable): Promise<void>;
  /** Starts a container; one already running is fine. */
  start(id: string): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceSeconds`; a container already stopped is fine. */
  stop(id: string, graceSeconds: number): Promise<void>;
  /** SIGKILL; a container that does not run is fine. */
  kill(id: string): Promise<void>;
  restart(id: string, graceSeconds: number): Promise<void>;
  /** Freezes every process of a running container (cgroup freezer): memory kept, no CPU. */
  pause(id: string): Promise<void>;
  /** Thaws a paused container. */
  unpause(id: string): Promise<void>;
  /** Removes a container (running or not) and its anonymous volumes; an absent one is fine. */
  remove(id: string): Promise<void>;
  /** The container's state, or null when the engine has no such container. The one "does it run?" question. */
  inspect(id: string): Promise<ContainerState | null>;
  /** One sample of the container's counters (no two-sample wait: the caller keeps the previous one). */
  stats(id: string): Promise<RawStats>;

  /** `docker commit` (the container paused meanwhile) to the image `ref` carrying `labels`. */
  commit(id: string, ref: string, labels: Record<string, string>): Promise<void>;
  /** A tar of `path` in the container (volumes included), its last path element at the root of the tar. */
  getArchive(id: string, path: string): Promise<Readable>;
  /** The image's size in bytes, or null when the engine has no such image. */
  imageSize(ref: string): Promise<number | null>;
  /** Removes an image; an absent one is fine; one a container uses answers EngineError `conflict`. */
  removeImage(ref: string): Promise<void>;
  /** Snapshot images (LABEL_SNAPSHOT) carrying the managed label and `instance`'s label. */
  listSnapshotImages(instance: string): Promise<{ ref: string; snapshotId: string }[]>;

  /** Containers carrying the managed label and `instance`'s label. */
  listManaged(instance: string): Promise<ManagedObject[]>;
  /** Every address of every Keel-managed container on the engine, whichever Keel made it (clone and webhook targets refuse them). */
  managedAddresses(): Promise<string[]>;
  /** Volumes carrying the managed label and `instance`'s label. */
  listManagedVolumes(instance: string): Promise<ManagedObject[]>;
  /**
   * Follows container events of `instance`'s managed containers. Reconnects after a broken stream
   * and calls `onGap` then, since events may have been missed. `ready` settles once the first
   * stream is subscribed (or its first attempt failed): a pass over the engine after it misses nothing.
   */
  watchEvents(instance: string, onEvent: (e: EngineEvent) => void, onGap: () => void): { stop(): void; ready: Promise<void> };

  /** Engine log streams Keel holds open right now (followers' shared streams and snapshot reads). */
  readonly openLogStreams: number;
  /**
   * Reads a container's log as lines cut into pieces of at most LOG_PIECE_MAX_BYTES (frames.ts),
   * each with the engine's timestamp of its line. Streamed, never buffered whole: follow=false
   * resolves once the stream is open and `done` resolves after the last piece; follow=true stays
   * open until close() or the container stops.
   */
  logStream(
    containerId: string,
    opts: { follow: boolean; tail: number | 'all'; sinceSeconds?: number },
    onPiece: (stream: StdStream, piece: LogPiece) => void,
  ): Promise<LogStreamHandle>;
  /** Starts a process in the container and streams its output (chunks per stream) to onChunk. */
  execStart(containerId: string, opts: { cmd: string[]; env?: string[]; stdin?: boolean }, onChunk: (stream: StdStream, bytes: Uint8Array) => void): Promise<ExecHandle>;
  /** Starts a process on a TTY of `cols` x `rows` (docker exec -it); its bytes go to onData. */
  execTty(containerId: string, opts: { cmd: string[]; env?: string[]; cols: number; rows: number }, onData: (bytes: Uint8Array) => void): Promise<TtyHandle>;
  /**
   * Runs a short helper command (kill, ps, du, the files helpers) to completion and returns its
   * output, at most `maxBytes` of it (default 64 KiB, both streams together): past it the exec is
   * closed and its process group killed there and then, `truncated` is true and `exitCode` null.
   */
  execCollect(containerId: string, cmd: string[], maxBytes?: number): Promise<{ exitCode: number | null; stdout: string; stderr: string; truncated: boolean }>;
  /** Kills a process group inside the container (the exec'd command and everything it started); never throws. */
  killProcessGroup(containerId: string, pid: number): Promise<void>;
  /**
   * A regular file's bytes [start, start + length) (all of it without a range) through the container's
   * daemon, as a stream to pass on untouched; null when the container has no daemon to ask (the caller
   * reads through execStart). A refusal (the file gone, not readable) is EngineError `refused` with the
   * system's message.
   */
  download(containerId: string, path: string, range: { start: number; length: number } | null): Promise<ReadableStream<Uint8Array> | null>;
  /**
   * Writes `body` to `path` (its directories made) through the container's daemon, at most `maxBytes`
   * of it; null when the container has no daemon (the caller writes through execStart).
   */
  upload(containerId: string, path: string, body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<UploadResult | null>;
}

/** How an upload through the daemon ended: its size, or why not (past its limit, or the system's message). */
export type UploadResult = { ok: true; size: number } | { ok: false; tooLarge: boolean; message: string };

/** inspect()'s answer as "does it run?": true, false, or null when the engine has no such container. */
export const runState = (state: ContainerState | null): boolean | null => (state ? state.running : null);
