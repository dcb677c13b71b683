// Workspace lifecycle rules: ownership, names and ports, the state machine, and reconciliation of the
// stored state with the engine. No Elysia and no dockerode here: the engine is the wrapper in docker.ts.
//
// Every engine operation on one workspace runs on that workspace's queue, one at a time. An HTTP call
// checks and records the move to an in-progress status at once (answering 409 when the move is not
// allowed), queues the engine work, and answers; the queued work ends by settling the status from what
// the engine reports. Engine events (a container that dies or is removed behind Keel's back) queue a
// reconciliation that does the same, unless an operation is queued and will settle it anyway.
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { AppError } from '../../../platform/errors';
import type { Bus } from '../../../platform/bus/bus';
import type { Config } from '../../../platform/config';
import type { Db } from '../../../platform/db';
import { canAccess, type Actor } from '../../../platform/http/workspace-auth';
import { errorFields, isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import { EngineError, LABEL_INSTANCE, LABEL_MANAGED, LABEL_OWNER, LABEL_TEMPLATE, LABEL_WORKSPACE, type Engine } from '../engine/docker';
import { buildTemplateImage, templateImage } from '../engine/template-image';
import { allocatePorts, hostPortFree } from './ports';
import { CloneError, cloneRepo, repoUrlProblem, scrubUrls, tarDirectory } from './repo-clone';
import { supervisorScript } from './supervisor';
import { DEFAULT_TEMPLATE, templates, type Template } from './templates';
import type { CreateWorkspaceInput, WorkspaceView } from './lifecycle.model';
import type { WorkspacesConfig } from '../workspaces.config';
import { workspaces, type WorkspaceRow, type WorkspaceStatus, type WorkspaceType } from '../workspaces.tables';

export const MOUNT_PATH = '/workspace';

export interface WorkspaceServiceDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  clock: Clock;
  config: Config;
  settings: WorkspacesConfig;
  engine: Engine;
  /** Runs a short command in a running container (the exec wrapper of docker.ts's logs-and-exec section). */
  execCollect(containerId: string, cmd: string[]): Promise<{ exitCode: number | null; stdout: string }>;
  /** Marks this Keel's containers, so several Keels (or test runs) can share one engine. */
  instance: string;
}

/** The source statuses each operation accepts (README: states and transitions). */
export const ALLOWED_FROM = {
  start: ['stopped', 'failed'],
  stop: ['running', 'starting', 'restarting'],
  forceStop: ['running', 'starting', 'restarting', 'stopping'],
  restart: ['running', 'stopped'],
} as const satisfies Record<string, readonly WorkspaceStatus[]>;

type WorkspaceEvent = 'created' | 'started' | 'stopped' | 'restarted' | 'deleted' | 'failed';

const MiB = 1024 * 1024;
const DISK_TTL_MS = 30_000;

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1).replace(/\.0$/, '')}${units[i]}`;
}

const notFound = () => new AppError('WORKSPACE_NOT_FOUND', 404, 'workspace not found');

/** An engine failure as the API reports it: 502 with the engine's message (it names no secret). */
export function engineFailure(e: unknown): AppError {
  if (e instanceof AppError) return e;
  return new AppError('ENGINE_ERROR', 502, `the Docker engine refused the operation: ${e instanceof Error ? e.message : String(e)}`.slice(0, 400));
}

export class WorkspaceService {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly pending = new Map<string, number>();
  private readonly cpuSamples = new Map<string, { cpuTotal: number; systemTotal: number }>();
  /** Last disk figure per workspace: `du` walks the whole volume, so it runs at most every DISK_TTL_MS. */
  private readonly diskSeen = new Map<string, { text: string; at: number }>();
  private readonly imageReady = new Map<string, Promise<void>>();
  private allocation: Promise<unknown> = Promise.resolve();
  private portHint = 0;
  private watcher: { stop(): void } | undefined;
  /** Creations in progress, so a delete can cut a slow repo clone short instead of waiting for it. */
  private readonly provisioning = new Map<string, AbortController>();

  // Prepared once: the two reads every request makes (building drizzle SQL per call costs more than running it).
  private readonly byId;
  private readonly listedOwn;
  private readonly listedAll;

  constructor(private readonly deps: WorkspaceServiceDeps) {
    const { db } = deps;
    this.byId = db.select().from(workspaces).where(eq(workspaces.id, sql.placeholder('id'))).prepare();
    // A null status or type placeholder means "no filter". The owner's list uses the (owner, created_at) index.
    const optional = (column: typeof workspaces.status | typeof workspaces.type, name: string) =>
      sql`(${sql.placeholder(name)} IS NULL OR ${column} = ${sql.placeholder(name)})`;
    const filters = and(optional(workspaces.status, 'status'), optional(workspaces.type, 'type'));
    const order = [asc(workspaces.createdAt), asc(workspaces.id)] as const;
    this.listedOwn = db
      .select()
      .from(workspaces)
      .where(and(eq(workspaces.owner, sql.placeholder('owner')), filters))
      .orderBy(...order)
      .prepare();
    this.listedAll = db.select().from(workspaces).where(filters).orderBy(...order).prepare();
  }

  // ---- reads -------------------------------------------------------------------------------

  private row(id: string): WorkspaceRow | undefined {
    return this.byId.get({ id });
  }

  /** The workspace if `actor` may see it (owner or admin), else 404: another actor's workspace looks absent. */
  getOwned(actor: Actor, id: string): WorkspaceRow {
    const row = this.row(id);
    if (!row || !canAccess(actor, row.owner)) throw notFound();
    return row;
  }

  list(actor: Actor, filter: { status?: WorkspaceStatus; type?: WorkspaceType }): WorkspaceView[] {
    const filters = { status: filter.status ?? null, type: filter.type ?? null };
    const rows = actor.admin ? this.listedAll.all(filters) : this.listedOwn.all({ ...filters, owner: actor.id });
    return rows.map((r) => this.view(r));
  }

  private view(row: WorkspaceRow): WorkspaceView {
    const host = this.deps.config.publicHost;
    return {
      id: row.id,
      name: row.name,
      status: row.status,
      port: row.port,
      template: row.template,
      type: row.type,
      createdAt: row.createdAt,
      containerId: row.containerId,
      urls: {
        codeServer: `http://${host}:${row.port}`,
        rdp: `rdp://${host}:${row.rdpPort}`,
        ssh: `ssh -p ${row.sshPort} keel@${host}`,
      },
      ...(row.status === 'failed' && row.reason ? { reason: row.reason } : {}),
    };
  }

  async get(actor: Actor, id: string) {
    const row = this.getOwned(actor, id);
    return { ...this.view(row), stats: await this.stats(row) };
  }

  /** Live figures of a running workspace; zeros (and the last disk figure seen) otherwise. */
  private async stats(row: WorkspaceRow): Promise<{ cpu: string; memory: string; disk: string }> {
    const limit = (templates.get(row.template)?.resources.memoryMb ?? 0) * MiB;
    const idle = { cpu: '0.00%', memory: `0B / ${formatBytes(limit)}`, disk: this.diskSeen.get(row.id)?.text ?? 'unknown' };
    if (row.status !== 'running' || !row.containerId) return idle;
    const { engine } = this.deps;
    const cid = row.containerId;
    try {
      let prev = this.cpuSamples.get(cid);
      let s = await engine.stats(cid);
      if (!prev) {
        // No earlier sample: take a second one shortly after, rather than the engine's 1 s+ two-sample wait.
        prev = s;
        await Bun.sleep(200);
        s = await engine.stats(cid);
      }
      this.cpuSamples.set(cid, { cpuTotal: s.cpuTotal, systemTotal: s.systemTotal });
      const sys = s.systemTotal - prev.systemTotal;
      const cpu = sys > 0 ? ((s.cpuTotal - prev.cpuTotal) / sys) * s.onlineCpus * 100 : 0;
      const memory = `${formatBytes(s.memoryUsed)} / ${formatBytes(s.memoryLimit || limit)}`;
      const disk = await this.diskUsage(row.id, cid);
      return { cpu: `${Math.max(0, cpu).toFixed(2)}%`, memory, disk };
    } catch (e) {
      this.deps.log.warn('stats failed', { workspace: row.id, ...errorFields(e) });
      return idle;
    }
  }

  private async diskUsage(id: string, cid: string): Promise<string> {
    const seen = this.diskSeen.get(id);
    if (seen && this.deps.clock.now() - seen.at < DISK_TTL_MS) return seen.text;
    const r = await this.deps.execCollect(cid, ['/bin/sh', '-c', `timeout 3 du -sk ${MOUNT_PATH} 2>/dev/null | cut -f1; df -kP ${MOUNT_PATH} | tail -n 1`]);
    const [usedLine, dfLine] = r.stdout.trim().split('\n');
    const used = Number(usedLine);
    const total = Number(dfLine?.trim().split(/\s+/)[1]);
    if (!Number.isFinite(used) || !Number.isFinite(total) || !usedLine) return seen?.text ?? 'unknown';
    const text = `${formatBytes(used * 1024)} / ${formatBytes(total * 1024)}`;
    this.diskSeen.set(id, { text, at: this.deps.clock.now() });
    return text;
  }

  // ---- create ------------------------------------------------------------------------------

  async create(actor: Actor, input: CreateWorkspaceInput): Promise<WorkspaceRow> {
    const templateName = input.template ?? DEFAULT_TEMPLATE;
    const template = templates.get(templateName);
    if (!template) {
      throw new AppError('INVALID_REQUEST', 400, 'unknown template', { details: { property: '/template', known: [...templates.keys()] } });
    }
    if (input.repo) {
      const problem = repoUrlProblem(input.repo.url);
      if (problem) throw new AppError('INVALID_REQUEST', 400, problem, { details: { property: '/repo/url' } });
    }
    const row = await this.exclusive(() => this.reserve(actor, input, template));
    this.publish('created', row);
    void this.enqueue(row.id, () => this.provision(row.id, template, input.repo));
    return row;
  }

  /** Checks the name and ports and inserts the row; runs alone so two creates cannot take the same port. */
  private async reserve(actor: Actor, input: CreateWorkspaceInput, template: Template): Promise<WorkspaceRow> {
    const { db, config } = this.deps;
    if (db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.name, input.name)).get()) {
      throw new AppError('WORKSPACE_EXISTS', 409, 'a workspace with this name exists', { details: { property: '/name' } });
    }
    const reserved = new Set<number>();
    for (const r of db.select({ a: workspaces.port, b: workspaces.sshPort, c: workspaces.rdpPort }).from(workspaces).all()) {
      reserved.add(r.a).add(r.b).add(r.c);
    }
    if (input.port !== undefined) {
      if (reserved.has(input.port)) {
        throw new AppError('PORT_UNAVAILABLE', 409, 'the requested port is used by another workspace', { details: { port: input.port } });
      }
      if (!(await hostPortFree(input.port))) {
        throw new AppError('PORT_UNAVAILABLE', 409, 'the requested port is in use on the host', { details: { port: input.port } });
      }
      reserved.add(input.port);
    }
    const auto = await allocatePorts(config.workspacePortRange, reserved, input.port === undefined ? 3 : 2, this.portHint);
    if (!auto) {
      throw new AppError('PORT_UNAVAILABLE', 409, 'no free port is left in APP_WORKSPACE_PORT_RANGE', {
        details: { range: config.workspacePortRange.join('-') },
      });
    }
    this.portHint = (auto[auto.length - 1]! - config.workspacePortRange[0] + 1) % (config.workspacePortRange[1] - config.workspacePortRange[0] + 1);
    const [port, sshPort, rdpPort] = input.port === undefined ? auto : [input.port, ...auto];
    const id = newId('ws', this.deps.clock);
    const now = isoNow(this.deps.clock);
    const row: WorkspaceRow = {
      id,
      name: input.name,
      owner: actor.id,
      template: template.name,
      type: input.type ?? 'persistent',
      status: 'creating',
      port: port!,
      sshPort: sshPort!,
      rdpPort: rdpPort!,
      containerId: null,
      volume: `keel-ws-${id.replace('_', '-')}`,
      provisioned: false,
      repoUrl: input.repo ? scrubUrls(input.repo.url) : null,
      repoBranch: input.repo?.branch ?? null,
      reason: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      db.insert(workspaces).values(row).run();
    } catch (e) {
      // The checks above run alone in this process; a unique violation means another Keel shares the database.
      const msg = String((e as Error).message);
      if (msg.includes('workspaces_workspaces.name')) throw new AppError('WORKSPACE_EXISTS', 409, 'a workspace with this name exists');
      if (msg.includes('UNIQUE')) throw new AppError('PORT_UNAVAILABLE', 409, 'the port was taken meanwhile; retry');
      throw e;
    }
    return row;
  }

  /** Image, volume, container, repo, start: any failure ends in `failed` with the reason. */
  private async provision(id: string, template: Template, repo: CreateWorkspaceInput['repo']): Promise<void> {
    const { engine } = this.deps;
    let row = this.row(id);
    if (!row) return;
    const abort = new AbortController();
    this.provisioning.set(id, abort);
    try {
      await this.ensureImage(template);
      await engine.createVolume(row.volume, this.labels(row));
      const containerId = await this.createContainer(row, template);
      row = this.update(id, { containerId });
      abort.signal.throwIfAborted();
      if (repo) {
        const clone = await cloneRepo({ url: repo.url, branch: repo.branch, timeoutMs: this.deps.settings.cloneTimeoutMs, signal: abort.signal });
        try {
          const [uid, gid] = template.user.split(':').map(Number);
          const tar = tarDirectory(clone.dir, uid!, gid!);
          await Promise.all([engine.putArchive(containerId, MOUNT_PATH, tar.stream), tar.done]);
        } finally {
          clone.cleanup();
        }
      }
      abort.signal.throwIfAborted();
      this.update(id, { provisioned: true });
      await engine.start(containerId);
      await this.settle(id, 'running');
    } catch (e) {
      const current = this.row(id);
      // A container that never got its repo is useless: remove it; the volume stays until delete.
      if (current?.containerId && !current.provisioned) {
        await engine.remove(current.containerId).catch(() => {});
        this.update(id, { containerId: null });
      }
      // Cancelled by a delete, which is queued right behind and removes the rest.
      if (!abort.signal.aborted) this.fail(id, this.reason(e));
    } finally {
      this.provisioning.delete(id);
    }
  }

  private reason(e: unknown): string {
    if (e instanceof CloneError) return e.message;
    if (e instanceof EngineError) return scrubUrls(`engine: ${e.message}`).slice(0, 500);
    this.deps.log.error('workspace operation failed', errorFields(e));
    return scrubUrls(e instanceof Error ? e.message : String(e)).slice(0, 500);
  }

  private labels(row: WorkspaceRow): Record<string, string> {
    return {
      [LABEL_MANAGED]: 'true',
      [LABEL_WORKSPACE]: row.id,
      [LABEL_OWNER]: row.owner,
      [LABEL_TEMPLATE]: row.template,
      [LABEL_INSTANCE]: this.deps.instance,
    };
  }

  private createContainer(row: WorkspaceRow, template: Template): Promise<string> {
    return this.deps.engine.createContainer({
      name: `keel-${row.name}-${row.id.slice(-6)}`,
      image: this.imageOf(template),
      cmd: ['/bin/sh', '-c', supervisorScript(template.command, template.services)],
      user: template.user,
      workdir: template.workdir,
      env: { ...template.env, KEEL_WORKSPACE_ID: row.id, KEEL_WORKSPACE_NAME: row.name },
      hostname: row.name.replace(/[._]/g, '-').slice(0, 63),
      labels: this.labels(row),
      volume: row.volume,
      mountPath: MOUNT_PATH,
      ports: [
        { container: template.ports.codeServer, host: row.port },
        { container: template.ports.ssh, host: row.sshPort },
        { container: template.ports.rdp, host: row.rdpPort },
      ],
      bindAddress: this.deps.settings.bindAddress,
      memoryBytes: template.resources.memoryMb * MiB,
      nanoCpus: Math.round(template.resources.cpus * 1e9),
      pids: template.resources.pids,
    });
  }

  private imageOf(template: Template): string {
    return templateImage(template, this.deps.settings);
  }

  /** The template's image: present, built by Keel (engine/template-image.ts), or pulled. One attempt at a time per image. */
  private ensureImage(template: Template): Promise<void> {
    const image = this.imageOf(template);
    let p = this.imageReady.get(image);
    if (!p) {
      p = (async () => {
        const { engine } = this.deps;
        if (await engine.imageExists(image)) return;
        if (await buildTemplateImage(engine, template, image, this.deps.settings, this.deps.log)) return;
        try {
          await engine.pullImage(image);
        } catch (e) {
          throw new EngineError(`image ${image} is not present and could not be pulled (${(e as Error).message}); build it from templates/${template.name}/Dockerfile`);
        }
      })();
      this.imageReady.set(image, p);
      // Checked again next time (the image may be removed meanwhile); a failed attempt is simply retried.
      void p.then(
        () => this.imageReady.delete(image),
        () => this.imageReady.delete(image),
      );
    }
    return p;
  }

  // ---- start, stop, restart, delete ------------------------------------------------------

  start(actor: Actor, id: string): { id: string; status: WorkspaceStatus } {
    const row = this.getOwned(actor, id);
    if (row.status === 'failed' && !row.provisioned) {
      throw new AppError('INVALID_TRANSITION', 409, 'this workspace failed during creation and cannot start; delete it and create it again', {
        details: { status: row.status, operation: 'start', reason: row.reason ?? '' },
      });
    }
    this.transition(row, 'start', ALLOWED_FROM.start, 'starting');
    void this.enqueue(id, async () => {
      try {
        const template = templates.get(row.template);
        if (!template) throw new Error(`template ${row.template} no longer exists`);
        let cid = this.row(id)?.containerId ?? null;
        if (!cid || !(await this.deps.engine.inspect(cid))) {
          // Removed outside Keel: recreate it from the template over the kept volume.
          await this.ensureImage(template);
          cid = await this.createContainer(this.row(id)!, template);
          this.update(id, { containerId: cid });
        }
        await this.deps.engine.start(cid);
        await this.settle(id, 'running');
      } catch (e) {
        this.fail(id, this.reason(e));
      }
    });
    return { id, status: 'starting' };
  }

  async stop(actor: Actor, id: string, force: boolean): Promise<{ id: string; status: WorkspaceStatus }> {
    const row = this.getOwned(actor, id);
    this.transition(row, 'stop', force ? ALLOWED_FROM.forceStop : ALLOWED_FROM.stop, 'stopping');
    const { engine, settings } = this.deps;
    if (force && row.containerId) {
      // Not behind a graceful stop that may be waiting out its grace period.
      await engine.kill(row.containerId).catch(() => {});
    }
    void this.enqueue(id, async () => {
      try {
        const cid = this.row(id)?.containerId;
        if (cid) await (force ? engine.kill(cid) : engine.stop(cid, settings.stopGraceSeconds));
        await this.settle(id, 'stopped');
      } catch (e) {
        this.fail(id, this.reason(e));
      }
    });
    return { id, status: 'stopping' };
  }

  restart(actor: Actor, id: string): { id: string; status: WorkspaceStatus } {
    const row = this.getOwned(actor, id);
    this.transition(row, 'restart', ALLOWED_FROM.restart, 'restarting');
    void this.enqueue(id, async () => {
      try {
        const cid = this.row(id)?.containerId;
        if (!cid) throw new EngineError('the workspace has no container');
        await this.deps.engine.restart(cid, this.deps.settings.stopGraceSeconds);
        await this.settle(id, 'running');
      } catch (e) {
        this.fail(id, this.reason(e));
      }
    });
    return { id, status: 'restarting' };
  }

  /** Removes the container, the row and (with `volumes`, or for a temporary workspace) the volume. */
  async remove(actor: Actor, id: string, volumes: boolean): Promise<{ id: string; deleted: true }> {
    this.getOwned(actor, id);
    this.provisioning.get(id)?.abort();
    let failure: unknown;
    await this.enqueue(id, async () => {
      const row = this.row(id);
      if (!row) return;
      try {
        await this.destroy(row, volumes || row.type === 'temporary');
      } catch (e) {
        failure = e;
      }
    });
    if (failure) throw engineFailure(failure);
    return { id, deleted: true };
  }

  private async destroy(row: WorkspaceRow, removeVolume: boolean): Promise<void> {
    const { engine, db } = this.deps;
    if (row.containerId) await engine.remove(row.containerId);
    else {
      // A container created just before a crash is found by its label.
      for (const c of await engine.listManaged(this.deps.instance)) if (c.workspaceId === row.id) await engine.remove(c.id);
    }
    if (removeVolume) await engine.removeVolume(row.volume);
    db.delete(workspaces).where(eq(workspaces.id, row.id)).run();
    if (row.containerId) this.cpuSamples.delete(row.containerId);
    this.diskSeen.delete(row.id);
    this.publish('deleted', row);
  }

  /** Records the move to an in-progress status if the current status allows it, atomically; else 409. */
  private transition(row: WorkspaceRow, operation: string, allowed: readonly WorkspaceStatus[], to: WorkspaceStatus) {
    const refuse = (status: WorkspaceStatus) =>
      new AppError('INVALID_TRANSITION', 409, `cannot ${operation} a workspace that is ${status}`, {
        details: { status, operation, allowedFrom: [...allowed] },
      });
    if (!allowed.includes(row.status)) throw refuse(row.status);
    const res = this.deps.db
      .update(workspaces)
      .set({ status: to, updatedAt: isoNow(this.deps.clock) })
      .where(and(eq(workspaces.id, row.id), inArray(workspaces.status, [...allowed])))
      .run() as unknown as { changes: number };
    if (res.changes === 0) {
      const now = this.row(row.id);
      if (!now) throw notFound();
      throw refuse(now.status);
    }
  }

  // ---- settling and reconciliation -------------------------------------------------------

  private update(id: string, set: Partial<WorkspaceRow>): WorkspaceRow {
    this.deps.db
      .update(workspaces)
      .set({ ...set, updatedAt: isoNow(this.deps.clock) })
      .where(eq(workspaces.id, id))
      .run();
    return this.row(id)!;
  }

  private fail(id: string, reason: string, extra: Partial<WorkspaceRow> = {}) {
    const row = this.row(id);
    if (!row) return;
    const after = this.update(id, { ...extra, status: 'failed', reason });
    this.deps.log.warn('workspace failed', { workspace: id, reason });
    this.publish('failed', after);
  }

  /**
   * Sets the status from the engine. `expect` is what the finished operation aimed at: a container
   * that is stopped when it should run is a failure with the engine's exit code, not a quiet `stopped`.
   */
  private async settle(id: string, expect?: 'running' | 'stopped'): Promise<void> {
    const row = this.row(id);
    if (!row?.containerId) return;
    const state = await this.deps.engine.inspect(row.containerId);
    if (!state) {
      if (row.type === 'temporary') return this.destroyQuietly(row);
      return this.fail(id, 'the container was removed outside Keel; start recreates it from the template', { containerId: null });
    }
    if (!state.running) {
      // A start that did not hold is a visible failure, temporary workspaces included (delete removes them).
      if (expect === 'running') {
        return this.fail(id, `the container exited at start (exit code ${state.exitCode}${state.oomKilled ? ', out of memory' : ''}${state.error ? `: ${state.error}` : ''})`);
      }
      // A failed workspace keeps its reason until it runs again (or is deleted).
      if (row.status === 'failed') return;
      if (row.type === 'temporary') return this.destroyQuietly(row);
      if (row.status === 'stopped') return;
      const after = this.update(id, { status: 'stopped', reason: null });
      this.cpuSamples.delete(row.containerId);
      this.publish('stopped', after);
      return;
    }
    if (row.status === 'running') return;
    const after = this.update(id, { status: 'running', reason: null });
    if (row.status === 'restarting') this.publish('restarted', after);
    this.publish('started', after);
  }

  /** A temporary workspace ends when it stops: container, volume and row go. */
  private async destroyQuietly(row: WorkspaceRow) {
    if (row.status !== 'stopped') this.publish('stopped', { ...row, status: 'stopped' });
    await this.destroy(row, true);
  }

  /** Settles one workspace from the engine unless an operation is queued that will do it. */
  private async reconcile(id: string): Promise<void> {
    if ((this.pending.get(id) ?? 0) > 0) return;
    const row = this.row(id);
    if (!row) return;
    if (row.status === 'creating') {
      // Nothing is queued, so Keel stopped in the middle of creating it.
      const { engine } = this.deps;
      if (row.containerId) await engine.remove(row.containerId).catch(() => {});
      return this.fail(id, 'creation was interrupted by a restart of Keel; delete the workspace and create it again', {
        containerId: null,
        provisioned: false,
      });
    }
    await this.settle(id);
  }

  /** Full pass: every stored workspace against the engine, and this instance's containers without a workspace removed. */
  async reconcileAll(): Promise<void> {
    const ids = this.deps.db.select({ id: workspaces.id }).from(workspaces).all().map((r) => r.id);
    await Promise.all(ids.map((id) => this.enqueue(id, () => this.reconcile(id), false)));
    const known = new Set(ids);
    for (const c of await this.deps.engine.listManaged(this.deps.instance)) {
      if (!known.has(c.workspaceId)) {
        this.deps.log.warn('removing a container whose workspace no longer exists', { container: c.id.slice(0, 12) });
        await this.deps.engine.remove(c.id).catch(() => {});
      }
    }
  }

  /** Follows engine events (start, die, destroy) while Keel runs; a gap in the stream triggers a full pass. */
  watch(): void {
    this.watcher = this.deps.engine.watchEvents(
      this.deps.instance,
      (e) => {
        if (e.action === 'start' || e.action === 'die' || e.action === 'destroy') {
          void this.enqueue(e.workspaceId, () => this.reconcile(e.workspaceId), false);
        }
      },
      () => void this.reconcileAll().catch((err) => this.deps.log.warn('reconciliation failed', errorFields(err))),
    );
  }

  /** Stops following events and waits (bounded) for queued engine work. */
  async close(): Promise<void> {
    this.watcher?.stop();
    // A clone in flight is cut short; the workspace stays `creating` and the next start-up marks it failed.
    for (const a of this.provisioning.values()) a.abort();
    await Promise.race([Promise.allSettled([...this.chains.values()]), Bun.sleep(15_000)]);
  }

  // ---- plumbing ----------------------------------------------------------------------------

  /** Runs `fn` after every earlier engine task of the workspace. `isOperation` tasks defer event reconciliations. */
  private enqueue(id: string, fn: () => Promise<void>, isOperation = true): Promise<void> {
    if (isOperation) this.pending.set(id, (this.pending.get(id) ?? 0) + 1);
    const prev = this.chains.get(id) ?? Promise.resolve();
    const task = prev.then(async () => {
      try {
        await fn();
      } catch (e) {
        this.deps.log.error('workspace task failed', { workspace: id, ...errorFields(e) });
      } finally {
        if (isOperation) {
          const n = (this.pending.get(id) ?? 1) - 1;
          if (n > 0) this.pending.set(id, n);
          else this.pending.delete(id);
        }
      }
    });
    this.chains.set(id, task);
    void task.then(() => {
      if (this.chains.get(id) === task) this.chains.delete(id);
    });
    return task;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.allocation.then(fn, fn);
    this.allocation = run.catch(() => {});
    return run;
  }

  /** Bus event after the change is committed; a failing subscriber never reaches us (bus contract). */
  private publish(event: WorkspaceEvent, row: WorkspaceRow) {
    const payload = {
      event: `workspace.${event}`,
      timestamp: isoNow(this.deps.clock),
      owner: row.owner,
      workspace: { id: row.id, name: row.name, status: row.status, ...(row.reason ? { reason: row.reason } : {}) },
    };
    void this.deps.bus.publish(`evt.workspace.${event}`, payload).catch((e) => this.deps.log.warn('publish failed', errorFields(e)));
  }
}
