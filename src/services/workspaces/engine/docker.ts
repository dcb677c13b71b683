// The Docker engine behind Keel's Engine interface (engine/engine.ts): the only file that imports
// dockerode. Every call goes through `call` or `callOr`, so what leaves this file is an EngineError
// with a kind, never a raw dockerode error, and no caller reads an HTTP status code. What each call
// means is documented once, on the Engine interface.
import Docker from 'dockerode';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import {
  EngineError,
  LABEL_INSTANCE,
  LABEL_MANAGED,
  LABEL_WORKSPACE,
  type ContainerSpec,
  type ContainerState,
  type Engine,
  type LogStreamHandle,
  type ManagedObject,
  type RawStats,
  type StdStream,
} from './engine';
import { call, callOr, engineError, streamEnd } from './docker-calls';
import { networkCalls } from './docker-networks';
import { execCalls } from './docker-exec';
import { execTty } from './docker-tty';
import { imageCalls } from './docker-images';
import { frameSplitter, jsonLineSplitter, logPieceAssembler, rawLogAssembler, type LogPiece } from './frames';

/** The dockerode client, for the engine files split out of this one (docker-networks.ts). */
export type DockerClient = Docker;

const PING_TIMEOUT_MS = 5_000;

/**
 * DOCKER_HOST as dockerode wants it: unix:// socket or tcp:// address; unset means the engine default.
 * With `certPath` (DOCKER_CERT_PATH's layout: ca.pem, cert.pem, key.pem) a tcp:// engine is spoken to
 * over TLS with a client certificate, as the docker CLI does.
 */
function connection(dockerHost: string | undefined, certPath?: string): Docker.DockerOptions | undefined {
  if (!dockerHost) return undefined;
  if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) };
  const m = /^(?:tcp|http|https):\/\/([^:/]+):(\d+)\/?$/.exec(dockerHost);
  if (m && certPath) {
    const pem = (f: string) => readFileSync(join(certPath, f));
    return { host: m[1], port: Number(m[2]), protocol: 'https', ca: pem('ca.pem'), cert: pem('cert.pem'), key: pem('key.pem') };
  }
  if (m) return { host: m[1], port: Number(m[2]), protocol: 'http' };
  return undefined;
}

export function createEngine(dockerHost?: string, opts: { certPath?: string } = {}): Engine {
  const docker = new Docker(connection(dockerHost, opts.certPath));

  const drain = (stream: Readable) =>
    new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(stream, (err: Error | null, out: { error?: string; errorDetail?: { message?: string } }[]) => {
        const failed = out?.find((o) => o.error || o.errorDetail);
        if (err) reject(engineError(err));
        else if (failed) reject(new EngineError(failed.errorDetail?.message ?? failed.error ?? 'engine error'));
        else resolve();
      });
    });

  const managedFilter = (instance: string) => [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`];
  let openStreams = 0;

  const engine: Engine = {
    ...networkCalls(docker),
    ...imageCalls(docker),
    ...execCalls(docker),
    execTty: (containerId, opts, onData) => execTty(docker, containerId, opts, onData),

    async ping() {
      // Bounded: an engine that accepts the connection and never answers is as good as none.
      const signal = AbortSignal.timeout(PING_TIMEOUT_MS);
      // dockerode's ping takes the signal at run time; its types only know ping().
      const ping = docker.ping as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>;
      await call(() => ping.call(docker, { abortSignal: signal })).catch((e: EngineError) => {
        throw signal.aborted ? new EngineError(`the engine did not answer within ${PING_TIMEOUT_MS / 1000} s`, 'unavailable') : e;
      });
    },

    async memoryBytes() {
      const info = (await call(() => docker.info())) as { MemTotal?: number };
      return info.MemTotal ?? 0;
    },

    imageExists(ref: string): Promise<boolean> {
      return callOr(404, false, () => docker.getImage(ref).inspect().then(() => true));
    },

    async pullImage(ref: string): Promise<void> {
      const stream = await call(() => docker.pull(ref) as Promise<Readable>);
      await drain(stream);
    },

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

    async createVolume(name: string, labels: Record<string, string>, sizeLimit?: string): Promise<void> {
      // `size` is honoured by the local driver only where the engine's volume directory supports
      // quotas (xfs mounted with pquota); elsewhere the engine refuses the volume.
      await call(() => docker.createVolume({ Name: name, Labels: labels, ...(sizeLimit ? { DriverOpts: { size: sizeLimit } } : {}) }));
    },

    async removeVolume(name: string): Promise<void> {
      await callOr(404, undefined, () => docker.getVolume(name).remove());
    },

    async fillVolume(name, labels, image, tar) {
      await call(() => docker.createVolume({ Name: name, Labels: labels }));
      // Created, never started: no process runs; no network, so it joins none.
      const c = await call(() =>
        docker.createContainer({ Image: image, Cmd: ['/keel-never-run'], NetworkDisabled: true, Labels: { 'dev.keel.reader': 'true' }, HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: name, Target: '/keel-fill' }] } }),
      );
      try {
        await call(() => c.putArchive(tar, { path: '/keel-fill' }));
      } finally {
        await c.remove({ force: true }).catch(() => {});
      }
    },

    // Least privilege: no capabilities, no new privileges, memory, CPU and pid limits, an init as PID 1.
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
          // The command is Keel's whole command (a template's ENTRYPOINT is part of it): the image's entrypoint is reset.
          Entrypoint: [''],
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
            Mounts: [
              { Type: 'volume', Source: spec.volume, Target: spec.mountPath },
              ...(spec.readOnlyVolumes ?? []).map((v) => ({ Type: 'volume' as const, Source: v.name, Target: v.target, ReadOnly: true })),
            ],
            PortBindings: bindings,
            RestartPolicy: { Name: 'no' },
            // Its own bridge only (never the engine's default bridge, shared by every container).
            NetworkMode: spec.network,
            // Rotated by the engine, so a chatty workspace cannot fill the host's disk with its log.
            LogConfig: { Type: 'json-file', Config: { 'max-size': spec.log.maxSize, 'max-file': String(spec.log.maxFiles) } },
            ...(spec.diskLimit ? { StorageOpt: { size: spec.diskLimit } } : {}),
          },
        }),
      );
      return c.id;
    },

    // The engine has no file calls of its own but archives: transfers go through execStart (files.service.ts).
    download: async () => null,
    upload: async () => null,

    async putArchive(id: string, path: string, tar: Readable): Promise<void> {
      await call(() => docker.getContainer(id).putArchive(tar, { path }));
    },

    async start(id: string): Promise<void> {
      await callOr(304, undefined, () => docker.getContainer(id).start());
    },

    async stop(id: string, graceSeconds: number): Promise<void> {
      await callOr(304, undefined, () => docker.getContainer(id).stop({ t: graceSeconds }));
    },

    async kill(id: string): Promise<void> {
      await callOr(409, undefined, () => docker.getContainer(id).kill({ signal: 'SIGKILL' }));
    },

    async restart(id: string, graceSeconds: number): Promise<void> {
      await call(() => docker.getContainer(id).restart({ t: graceSeconds }));
    },

    // No inspect first: resume is on a user's critical path (200 ms); the state machine knows the state.
    async pause(id: string): Promise<void> {
      await call(() => docker.getContainer(id).pause());
    },

    async unpause(id: string): Promise<void> {
      await call(() => docker.getContainer(id).unpause());
    },

    async remove(id: string): Promise<void> {
      await callOr(404, undefined, () => docker.getContainer(id).remove({ force: true, v: true }));
    },

    async inspect(id: string): Promise<ContainerState | null> {
      const info = await callOr(404, null, () => docker.getContainer(id).inspect());
      if (!info) return null;
      return {
        running: info.State.Running && !info.State.Restarting,
        paused: info.State.Paused,
        exitCode: info.State.ExitCode,
        oomKilled: info.State.OOMKilled,
        error: info.State.Error ?? '',
        networks: Object.keys(info.NetworkSettings?.Networks ?? {}),
        address: Object.values(info.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress,
        labels: info.Config.Labels ?? {},
      };
    },

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

    async listManaged(instance) {
      const list = await call(() => docker.listContainers({ all: true, filters: { label: managedFilter(instance) } }));
      return list.map((c): ManagedObject => ({ id: c.Id, workspaceId: c.Labels[LABEL_WORKSPACE] ?? '' }));
    },

    async managedAddresses() {
      const list = await call(() => docker.listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=true`] } }));
      const out: string[] = [];
      for (const c of list) {
        for (const n of Object.values(c.NetworkSettings?.Networks ?? {})) {
          if (n.IPAddress) out.push(n.IPAddress);
          if (n.GlobalIPv6Address) out.push(n.GlobalIPv6Address);
        }
      }
      return out;
    },

    async listManagedVolumes(instance) {
      const res = await call(() => docker.listVolumes({ filters: { label: managedFilter(instance) } }));
      return (res.Volumes ?? []).map((v): ManagedObject => ({ id: v.Name, workspaceId: v.Labels?.[LABEL_WORKSPACE] ?? '' }));
    },

    watchEvents(instance, onEvent, onGap) {
      let stopped = false;
      let current: Readable | undefined;
      const ready = Promise.withResolvers<void>();
      const connect = async () => {
        // Back off while the engine is unreachable, so a long outage is not a busy loop of retries.
        let delayMs = 1000;
        while (!stopped) {
          try {
            const stream = (await call(() => docker.getEvents({ filters: { type: ['container'], label: managedFilter(instance) } }))) as unknown as Readable;
            if (stopped) {
              stream.destroy();
              return;
            }
            current = stream;
            ready.resolve();
            delayMs = 1000;
            stream.on(
              'data',
              jsonLineSplitter((v) => {
                const e = v as { Action?: string; status?: string; Actor?: { Attributes?: Record<string, string> } };
                const workspaceId = e.Actor?.Attributes?.[LABEL_WORKSPACE];
                if (workspaceId) onEvent({ action: e.Action ?? e.status ?? '', workspaceId });
              }),
            );
            await streamEnd(stream, () => {});
          } catch {
            // Engine unreachable: retry below (and the gap then reconciles).
          }
          ready.resolve();
          if (stopped) return;
          await Bun.sleep(delayMs);
          delayMs = Math.min(delayMs * 2, 30_000);
          if (!stopped) onGap();
        }
      };
      void connect();
      return {
        ready: ready.promise,
        stop() {
          stopped = true;
          current?.destroy();
        },
      };
    },

    get openLogStreams() {
      return openStreams;
    },

    async logStream(
      containerId: string,
      opts: { follow: boolean; tail: number | 'all'; sinceSeconds?: number },
      onPiece: (stream: StdStream, piece: LogPiece) => void,
    ): Promise<LogStreamHandle> {
      const abort = new AbortController();
      // dockerode buffers a log read without follow whole (a 100 MB line would be 100 MB at once):
      // ask for the same call as a stream, so a read holds one engine chunk at a time.
      const res = await call(
        () =>
          new Promise<NodeJS.ReadableStream & { destroy(): void }>((resolve, reject) =>
            docker.modem.dial(
              {
                path: `/containers/${encodeURIComponent(containerId)}/logs?`,
                method: 'GET',
                isStream: true,
                abortSignal: abort.signal,
                statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
                options: {
                  follow: opts.follow,
                  stdout: true,
                  stderr: true,
                  timestamps: true,
                  tail: opts.tail === 'all' ? undefined : opts.tail,
                  since: opts.sinceSeconds,
                },
              },
              (err: unknown, data: unknown) => (err ? reject(err) : resolve(data as NodeJS.ReadableStream & { destroy(): void })),
            ),
          ),
      );
      const raw = rawLogAssembler(onPiece);
      const framed = logPieceAssembler(onPiece);
      const split = frameSplitter((s, b, isFramed) => (isFramed ? framed.push(s, b) : raw.push(s, b)));
      openStreams++;
      let ended = false;
      res.on('data', (b: Buffer) => split(b));
      const done = streamEnd(res, () => {
        ended = true;
        openStreams--;
        framed.flush();
        raw.flush();
      });
      return {
        done,
        close() {
          if (ended) return;
          res.destroy();
          abort.abort();
        },
        // The engine's socket fills and the engine waits: a slow reader never makes Keel hold the log.
        pause: () => void res.pause(),
        resume: () => void res.resume(),
        get messages() {
          return framed.messages;
        },
      };
    },
  };
  return engine;
}
