// An Engine whose processes start through keeld, the daemon in every workspace container, instead of
// the engine's exec API (three API round trips and a runc exec each): exec, the files helpers,
// processes and terminals all come here through execStart, execTty, execCollect and
// killProcessGroup, so no feature knows which path ran them.
//
// At create, a container gets keeld's volume (one per engine and keeld build, read-only at /.keel)
// and a command that starts keeld before its own: `keeld init --verifier V -- <command>`. The token
// is HMAC(key, salt), the salt a label of the container (invisible inside it), V the token's SHA-256:
// nothing in the container reveals the token, and a restart of Keel derives it again.
//
// When keeld does not answer (a container made before keeld, a daemon killed, an engine whose
// container addresses this host cannot reach), the call goes to the engine's exec, logged once per
// container and minute; a daemon gone from a running container is started again through the
// engine's exec, and one found running there makes the whole engine go through its exec for a while.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../platform/runtime';
import { tarArchive } from '../images/tar';
import { EngineError, settledExitCode, type Engine, type ExecHandle, type TtyHandle } from './engine';
import { collector } from './exec-collect';
import { KEELD_MOUNT, KEELD_PATH, KEELD_PORT, KeeldUnreachable, LABEL_DAEMON, keeldExec, keeldPing, keeldSignal, keeldToken, keeldTty, keeldVerifier, type KeeldTarget } from './keeld';

/** How long a container whose keeld cannot be reached uses the engine's exec before keeld is tried again. */
const DIRECT_MS = 60_000;
/** At most one restart of a container's keeld in this period. */
const RESTART_EVERY_MS = 10_000;
/** How long an engine whose containers' keeld runs but cannot be reached from here uses the engine's exec. */
const UNROUTED_MS = 10 * 60_000;
/** `keeld serve --detach`'s exit code when a keeld listens already (daemon/main.go). */
const ALREADY_RUNNING = 3;

const filesUrl = (t: KeeldTarget, query: URLSearchParams) => `http://${t.address}:${KEELD_PORT}/files?${query}`;

const restartable = (e: KeeldUnreachable) => e.code !== 'EREFUSED' && e.code !== 'ETIMEDOUT';

export interface DaemonDeps {
  /** keeld's bytes (built by scripts/daemon.ts); null: no daemon, every process goes through the engine. */
  binary: () => Promise<Uint8Array | null>;
  /** The key tokens are derived from (the workspaces' secret key in the data dir). */
  key: Buffer;
  log: Logger;
}

export function withDaemon(inner: Engine, deps: DaemonDeps): Engine {
  const { log } = deps;
  /** keeld's volume on this engine: named after the build, so a new build gets a volume of its own. */
  let volume: Promise<{ name: string; tar: Buffer } | null> | undefined;
  let filled: Promise<void> | undefined;
  const targets = new Map<string, Promise<KeeldTarget | null>>();
  /** Containers paused through this engine: a frozen keeld takes connections and never answers. */
  const paused = new Set<string>();
  /** Containers whose keeld could not be reached, until when the engine's exec serves them. */
  const direct = new Map<string, number>();
  const restarted = new Map<string, number>();
  /**
   * Until when this engine's containers are not reached through keeld: one ran already where Keel could
   * not reach it, so the engine's container addresses are not routed to this host (an engine on another
   * machine or network namespace), which holds for all of them.
   */
  let unroutedUntil = 0;

  const build = () =>
    (volume ??= deps.binary().then(async (bytes) => {
      if (!bytes) {
        log.warn('no workspace daemon binary (scripts/daemon.ts builds it): processes start through the engine');
        return null;
      }
      const name = `keel-daemon-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}`;
      return { name, tar: await tarArchive([{ type: 'file', path: 'keeld', mode: 0o555, data: bytes }]) };
    }));

  /** keeld's volume filled on this engine, through `image` (present: the container is about to use it). */
  async function ensureVolume(image: string): Promise<string | null> {
    const v = await build();
    if (!v) return null;
    filled ??= inner.fillVolume(v.name, { 'dev.keel.daemon-volume': 'true' }, image, v.tar).catch((e) => {
      filled = undefined;
      throw e;
    });
    await filled;
    return v.name;
  }

  function forget(id: string) {
    targets.delete(id);
  }

  /** The container's keeld, or null when it has none or cannot be used now (not running, paused, unreachable). */
  function targetOf(id: string): Promise<KeeldTarget | null> {
    if (paused.has(id) || unroutedUntil > Date.now() || (direct.get(id) ?? 0) > Date.now()) return Promise.resolve(null);
    let t = targets.get(id);
    if (!t) {
      t = inner.inspect(id).then((state) => {
        const salt = state?.labels?.[LABEL_DAEMON];
        if (!state?.running || state.paused || !state.address || !salt) {
          // Kept only for a container made without keeld: it will never have one.
          if (state && !salt) return null;
          forget(id);
          return null;
        }
        return { address: state.address, token: keeldToken(deps.key, salt) };
      });
      targets.set(id, t);
      t.catch(() => forget(id));
    }
    return t;
  }

  /** The container's processes start through the engine for DIRECT_MS, said once in the log. */
  function useEngine(id: string, reason: string): null {
    direct.set(id, Date.now() + DIRECT_MS);
    log.warn("the workspace daemon does not answer; the container's processes start through the engine for a minute", { container: id.slice(0, 12), reason });
    return null;
  }

  /** A failed keeld: starts it again when nothing listens, else leaves the container to the engine for a while. */
  async function recover(id: string, e: KeeldUnreachable): Promise<KeeldTarget | null> {
    forget(id);
    const target = await targetOf(id);
    if (!target) return null;
    // The container answered, but not as keeld (nothing listens, a reset): keeld is gone, and is started
    // again (a second one that finds the port taken just exits). A refusal (a token this keeld does not
    // take) or silence (an address this host cannot reach) is left to the engine.
    if (!restartable(e) || (restarted.get(id) ?? 0) > Date.now() - RESTART_EVERY_MS) return useEngine(id, e.message);
    restarted.set(id, Date.now());
    log.warn('the workspace daemon did not answer; starting it again in its container', { container: id.slice(0, 12) });
    const h = await inner.execStart(id, { cmd: [KEELD_PATH, 'serve', '--detach', '--verifier', keeldVerifier(target.token)] }, () => {});
    await h.done;
    if ((await settledExitCode(h)) !== ALREADY_RUNNING) return target;
    unroutedUntil = Date.now() + UNROUTED_MS;
    log.warn("the workspace daemon runs, but this host cannot reach its engine's containers: their processes start through the engine for ten minutes", { container: id.slice(0, 12) });
    return null;
  }

  /** `run` through keeld, else through the engine (`fallback`). */
  async function through<T>(id: string, run: (t: KeeldTarget) => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    const target = await targetOf(id).catch(() => null);
    if (!target) return fallback();
    try {
      return await run(target);
    } catch (e) {
      if (!(e instanceof KeeldUnreachable)) throw e;
      const again = await recover(id, e).catch(() => null);
      // A restarted keeld listens a moment after its fork returns.
      for (let i = 0; again && i < 10; i++) {
        try {
          return await run(again);
        } catch (e2) {
          // Anything but "not reached" may have started the process: it is the caller's, never run twice.
          if (!(e2 instanceof KeeldUnreachable)) throw e2;
          if (!restartable(e2)) break;
          await Bun.sleep(20);
        }
      }
      if (again) useEngine(id, 'it did not answer once started again');
      return fallback();
    }
  }

  const execStart: Engine['execStart'] = (id, opts, onChunk) =>
    through<ExecHandle>(id, (t) => keeldExec(t, opts, onChunk), () => inner.execStart(id, opts, onChunk));
  const execTty: Engine['execTty'] = (id, opts, onData) => through<TtyHandle>(id, (t) => keeldTty(t, opts, onData), () => inner.execTty(id, opts, onData));
  const killProcessGroup: Engine['killProcessGroup'] = (id, pid) =>
    through(id, (t) => keeldSignal(t, pid, 9), () => inner.killProcessGroup(id, pid)).catch(() => undefined);

  const overrides: Partial<Engine> = {
    async createContainer(spec) {
      const name = await ensureVolume(spec.image).catch((e) => {
        log.warn('the workspace daemon could not be put on the engine; this container starts without it', { reason: (e as Error).message });
        return null;
      });
      if (!name) return inner.createContainer(spec);
      const salt = randomBytes(16).toString('hex');
      return inner.createContainer({
        ...spec,
        cmd: [KEELD_PATH, 'init', '--verifier', keeldVerifier(keeldToken(deps.key, salt)), '--', ...spec.cmd],
        labels: { ...spec.labels, [LABEL_DAEMON]: salt },
        readOnlyVolumes: [...(spec.readOnlyVolumes ?? []), { name, target: KEELD_MOUNT }],
      });
    },
    // Its address may change with a new start: asked again.
    start: (id) => (forget(id), inner.start(id)),
    restart: (id, grace) => (forget(id), inner.restart(id, grace)),
    stop: (id, grace) => (forget(id), inner.stop(id, grace)),
    remove: (id) => (forget(id), direct.delete(id), restarted.delete(id), paused.delete(id), inner.remove(id)),
    async pause(id) {
      paused.add(id);
      await inner.pause(id).catch((e) => {
        paused.delete(id);
        throw e;
      });
    },
    async unpause(id) {
      await inner.unpause(id);
      paused.delete(id);
    },
    execStart,
    execTty,
    killProcessGroup,
    execCollect: collector(execStart, killProcessGroup),

    // Files over keeld's HTTP: bodies pass between Keel's client and keeld untouched (no per-chunk work here).
    async download(id, path, range) {
      const target = await targetOf(id).catch(() => null);
      if (!target) return null;
      const query = new URLSearchParams({ path, offset: String(range?.start ?? 0), length: String(range?.length ?? -1) });
      const res = await fetch(filesUrl(target, query), { headers: { authorization: `Bearer ${target.token}` } }).catch(() => null);
      // Nothing changed in the container: the read goes through the engine's path (which starts keeld again).
      if (!res) return (forget(id), null);
      if (res.ok && res.body) return res.body;
      throw new EngineError((await res.text()).trim().slice(0, 200), 'refused');
    },
    async upload(id, path, body, maxBytes) {
      const target = await targetOf(id).catch(() => null);
      // Checked first: once the body is handed to a connection that fails, no other path can have it.
      if (!target || !(await keeldPing(target).then(() => true, () => false))) return (forget(id), null);
      const res = await fetch(filesUrl(target, new URLSearchParams({ path })), {
        method: 'PUT',
        body: body ?? new Uint8Array(0),
        headers: { authorization: `Bearer ${target.token}`, 'x-keel-max-bytes': String(maxBytes) },
        duplex: 'half',
      } as RequestInit).catch((e: Error) => {
        forget(id);
        throw new EngineError(`the workspace daemon broke off the upload: ${e.message}`, 'failed');
      });
      const text = (await res.text()).trim();
      if (res.ok) return { ok: true, size: Number(text) };
      return { ok: false, tooLarge: res.status === 413, message: text.slice(0, 200) };
    },
  };
  // Every other call is the engine's own (its getters included, read through the prototype).
  return Object.assign(Object.create(inner) as Engine, overrides);
}

/** keeld's bytes as APP_WORKSPACE_DAEMON says: carried by the compiled binary, built into daemon/bin, a path, or none. */
export async function keeldBinary(setting: string): Promise<Uint8Array | null> {
  if (setting === 'off') return null;
  const read = async (path: string) => (existsSync(path) ? new Uint8Array(await Bun.file(path).arrayBuffer()) : null);
  if (setting !== 'auto') return read(setting);
  const embedded = Bun.embeddedFiles.find((f) => (f as File).name?.split('/').pop()?.startsWith('keeld'));
  if (embedded) return new Uint8Array(await embedded.arrayBuffer());
  return read(join(import.meta.dir, '../../../../daemon/bin/keeld'));
}
