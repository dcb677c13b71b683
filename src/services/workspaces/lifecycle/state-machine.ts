// The workspace state machine. An operation checks and records the move to its in-progress status at
// once (409 when the current status does not allow it), then queues the engine call on the
// workspace's queue and answers; the queued call ends by settling the status from what the engine
// reports, or in `failed` with the reason. Start, stop, restart, create and their resumption after a
// crash of Keel all take that one path (`run`).
import { WorkspaceErrors } from '../workspaces.errors';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Logger } from '../../../platform/runtime';
import { engineFailure, workspaceNotFound } from '../access';
import { EngineError, type Engine } from '../engine/engine';
import { failureReason, untilReady, type Provisioner } from './provision';
import type { LifecycleRepository } from './lifecycle.repository';
import type { Access } from '../access';
import type { Stats } from './stats';
import type { TaskQueue } from './task-queue';
import type { Template, TemplateRegistry } from '../images/templates';
import type { RepoRequest } from '../clones/repo-clone';
import type { Quotas } from '../quotas';
import type { WorkspacesConfig } from '../workspaces.config';
import type { WorkspaceRow, WorkspaceStatus } from '../workspaces.tables';

/** The source statuses each operation accepts (docs/workspaces.md: states and transitions). */
const ALLOWED_FROM = {
  start: ['stopped', 'failed'],
  stop: ['running', 'starting', 'restarting', 'paused'],
  forceStop: ['running', 'starting', 'restarting', 'stopping', 'paused'],
  pause: ['running'],
  resume: ['paused'],
  restart: ['running', 'stopped'],
} as const satisfies Record<string, readonly WorkspaceStatus[]>;

type Settled = 'running' | 'stopped';


export function createStateMachine(deps: {
  engine: Engine;
  records: LifecycleRepository;
  access: Access;
  queue: TaskQueue;
  provisioner: Provisioner;
  stats: Stats;
  templates: TemplateRegistry;
  settings: WorkspacesConfig;
  log: Logger;
  quotas: Quotas;
  /** Removes the workspace from the engine and the database (delete; a temporary workspace that stopped). */
  destroy(row: WorkspaceRow, removeVolume: boolean): Promise<void>;
}) {
  const { engine, records, queue, provisioner, settings, log } = deps;

  /** A temporary workspace ends when it stops: container, volume and row go. */
  async function endTemporary(row: WorkspaceRow) {
    if (row.status !== 'stopped') await records.publish('stopped', { ...row, status: 'stopped' });
    await deps.destroy(row, true);
  }

  /**
   * Sets the status from the engine. `expect` is what the finished operation aimed at: a container
   * that is stopped when it should run is a failure with the engine's exit code, not a quiet `stopped`.
   */
  async function settle(id: string, expect?: Settled): Promise<void> {
    const row = await deps.access.row(id);
    if (!row?.containerId) return;
    const state = await engine.inspect(row.containerId);
    if (!state) {
      if (row.type === 'temporary') return endTemporary(row);
      return records.fail(id, 'the container was removed outside Keel; start recreates it from the template', { containerId: null });
    }
    if (!state.running) {
      // A start that did not hold is a visible failure, temporary workspaces included (delete removes them).
      if (expect === 'running') {
        return records.fail(id, `the container exited at start (exit code ${state.exitCode}${state.oomKilled ? ', out of memory' : ''}${state.error ? `: ${state.error}` : ''})`);
      }
      // A failed workspace keeps its reason until it runs again (or is deleted).
      if (row.status === 'failed') return;
      if (row.type === 'temporary') return endTemporary(row);
      if (row.status === 'stopped') return;
      await records.change(id, { status: 'stopped', reason: null }, ['stopped']);
      deps.stats.forget(row, { disk: false });
      return;
    }
    // Paused outside Keel (docker pause) or by Keel before a crash: the row follows the engine.
    if (state.paused) {
      if (row.status !== 'paused') await records.change(id, { status: 'paused', reason: null }, ['paused']);
      return;
    }
    if (row.status === 'running') return;
    const events = row.status === 'restarting' ? (['restarted', 'started'] as const) : row.status === 'paused' ? (['resumed'] as const) : (['started'] as const);
    const after = await records.change(id, { status: 'running', reason: null, stopReason: null }, [...events]);
    deps.stats.begin(after);
  }

  /** The one path of every operation: queue the engine call, settle from the engine, or mark failed. */
  function run(id: string, work: (row: WorkspaceRow) => Promise<void>, expect: Settled): Promise<void> {
    return queue.enqueue(id, async () => {
      try {
        const row = await deps.access.row(id);
        if (!row) return;
        await work(row);
        await settle(id, expect);
      } catch (e) {
        await records.fail(id, failureReason(e, log));
      }
    });
  }

  function templateOf(row: WorkspaceRow): Template {
    const template = deps.templates.get(row.template);
    if (!template) throw new Error(`template ${row.template} no longer exists`);
    return template;
  }

  // The engine calls, one per in-progress status; each is also how a crash-interrupted one is finished.
  const work = {
    /** Provisions (finding what exists) and starts. Cancelled by a delete: nothing to start. */
    async create(row: WorkspaceRow, repo: RepoRequest | undefined) {
      const template = templateOf(row);
      const done = await provisioner.provision(row.id, template, repo);
      if (done === 'cancelled') return;
      await engine.start(done.containerId);
      await untilReady(engine, done.containerId, template);
    },
    /** A container removed outside Keel is recreated from the template over the kept volume. */
    async start(row: WorkspaceRow) {
      const template = templateOf(row);
      const containerId = await provisioner.ensureContainer(row, template);
      await engine.start(containerId);
      await untilReady(engine, containerId, template);
    },
    async stop(row: WorkspaceRow, force: boolean) {
      // A frozen container would hold SIGTERM until thawed: thaw it first so the stop is graceful.
      if (row.containerId && (await engine.inspect(row.containerId))?.paused) await engine.unpause(row.containerId);
      if (row.containerId) await (force ? engine.kill(row.containerId) : engine.stop(row.containerId, settings.stopGraceSeconds));
    },
    async restart(row: WorkspaceRow) {
      if (!row.containerId) throw new EngineError('the workspace has no container');
      await engine.restart(row.containerId, settings.stopGraceSeconds);
    },
  };

  /**
   * Records the move to an in-progress status if the current status allows it, atomically; else 409.
   * With `actor`, a move that makes the workspace run takes a running place of the actor's quota in
   * the same transaction (429 QUOTA_EXCEEDED, nothing moved, when none is left).
   */
  async function transition(row: WorkspaceRow, operation: string, allowed: readonly WorkspaceStatus[], to: WorkspaceStatus, actor?: Actor) {
    const refuse = (status: WorkspaceStatus) =>
      WorkspaceErrors.INVALID_TRANSITION(`cannot ${operation} a workspace that is ${status}`, { status, operation, allowedFrom: [...allowed] });
    if (!allowed.includes(row.status)) throw refuse(row.status);
    const move = (tx?: Parameters<LifecycleRepository['moveStatus']>[3]) => records.moveStatus(row.id, allowed, to, tx);
    if (!(await (actor ? deps.quotas.admitRunning(actor, row, move) : move()))) {
      const now = await deps.access.row(row.id);
      if (!now) throw workspaceNotFound();
      throw refuse(now.status);
    }
  }

  return {
    settle,

    /** Queues provisioning and the first start of a freshly reserved workspace. */
    create(row: WorkspaceRow, repo: RepoRequest | undefined) {
      // The clone queue place goes back however the creation ended, even one that never reached the
      // clone (a delete queued first, an image that failed); a clone that ran gave it back already.
      void run(row.id, (r) => work.create(r, repo), 'running').finally(() => repo?.ticket.release());
    },

    async start(actor: Actor, row: WorkspaceRow): Promise<{ id: string; status: WorkspaceStatus }> {
      if (row.status === 'failed' && !row.provisioned) {
        throw WorkspaceErrors.INVALID_TRANSITION('this workspace failed during creation and cannot start; delete it and create it again', { status: row.status, operation: 'start', reason: row.reason ?? '' });
      }
      await transition(row, 'start', ALLOWED_FROM.start, 'starting', actor);
      void run(row.id, work.start, 'running');
      return { id: row.id, status: 'starting' };
    },

    async stop(row: WorkspaceRow, force: boolean): Promise<{ id: string; status: WorkspaceStatus }> {
      await transition(row, 'stop', force ? ALLOWED_FROM.forceStop : ALLOWED_FROM.stop, 'stopping');
      void run(row.id, (r) => work.stop(r, force), 'stopped');
      // Not behind a graceful stop that may be waiting out its grace period.
      if (force && row.containerId) await engine.kill(row.containerId).catch(() => {});
      return { id: row.id, status: 'stopping' };
    },

    /**
     * Stops a workspace found idle, recording `stopReason: "idle"` with the move to `stopping`; does
     * nothing when its status moved meanwhile (an operation of the user wins).
     */
    async stopIdle(row: WorkspaceRow): Promise<void> {
      if (queue.busy(row.id) || !(await records.moveStatus(row.id, ['running'], 'stopping'))) return;
      await records.update(row.id, { stopReason: 'idle' });
      log.info('stopping an idle workspace', { workspace: row.id, autoStopMinutes: row.autoStopMinutes });
      void run(row.id, (r) => work.stop(r, false), 'stopped');
    },

    /**
     * Pauses (docker pause) or resumes (unpause) and answers once the engine did it: these take
     * milliseconds, so the answer is the settled status, not an in-progress one. Runs on the
     * workspace's queue, behind any operation in flight, and checks the status again there.
     */
    async freeze(row: WorkspaceRow, operation: 'pause' | 'resume'): Promise<{ id: string; status: WorkspaceStatus }> {
      const allowed = ALLOWED_FROM[operation];
      const refuse = (status: WorkspaceStatus) =>
        WorkspaceErrors.INVALID_TRANSITION(`cannot ${operation} a workspace that is ${status}`, { status, operation, allowedFrom: [...allowed] });
      if (!(allowed as readonly string[]).includes(row.status)) throw refuse(row.status);
      let failure: unknown;
      let status: WorkspaceStatus = row.status;
      await queue.enqueue(row.id, async () => {
        const now = await deps.access.row(row.id);
        if (!now) return void (failure = workspaceNotFound());
        if (!(allowed as readonly string[]).includes(now.status) || !now.containerId) return void (failure = refuse(now.status));
        try {
          if (operation === 'pause') {
            await engine.pause(now.containerId);
            await records.change(now.id, { status: 'paused' }, ['paused']);
            deps.stats.forget(now, { disk: false });
            status = 'paused';
          } else {
            await engine.unpause(now.containerId);
            deps.stats.begin(await records.change(now.id, { status: 'running', stopReason: null }, ['resumed']));
            status = 'running';
          }
        } catch (e) {
          // The engine says what the container is now (it may have died meanwhile).
          await settle(now.id).catch(() => {});
          failure = engineFailure(e);
        }
      });
      if (failure) throw failure;
      return { id: row.id, status };
    },

    async restart(actor: Actor, row: WorkspaceRow): Promise<{ id: string; status: WorkspaceStatus }> {
      await transition(row, 'restart', ALLOWED_FROM.restart, 'restarting', actor);
      void run(row.id, work.restart, 'running');
      return { id: row.id, status: 'restarting' };
    },

    /**
     * Finishes an operation that a crash of Keel cut short, from the status it left: a creation is
     * provisioned and started (unless its repo copy was cut: the raw URL is never stored, so it cannot
     * be cloned again), a start or a restart starts the container, a stop stops it.
     */
    resume(row: WorkspaceRow): Promise<void> {
      // Anything else is settled, not resumed (reconcile.ts).
      switch (row.status) {
        case 'creating':
          if (row.repoUrl && !row.provisioned) {
            return run(row.id, async (r) => {
              if (r.containerId) await engine.remove(r.containerId);
              await records.fail(r.id, 'creation was interrupted by a restart of Keel while the repo was being copied; delete the workspace and create it again', {
                containerId: null,
              });
            }, 'running');
          }
          return run(row.id, (r) => work.create(r, undefined), 'running');
        case 'starting':
        case 'restarting':
          return run(row.id, work.start, 'running');
        case 'stopping':
          return run(row.id, (r) => work.stop(r, false), 'stopped');
        default:
          return Promise.resolve();
      }
    },
  };
}

export type StateMachine = ReturnType<typeof createStateMachine>;
