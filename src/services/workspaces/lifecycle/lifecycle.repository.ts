// The lifecycle's repository, the stored side of a workspace: every query of the feature (the rows,
// their reservation, the row updates every lifecycle step makes) and the bus event of each change, written in the same transaction (an outbox row) and relayed once committed, so a
// crash at any moment loses no event of a change that happened (platform/bus/event-outbox.ts).
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Bus } from '../../../platform/bus/bus';
import { createEventOutbox } from '../../../platform/bus/event-outbox';
import type { Orm, Store } from '../../../platform/store';
import type { Actor } from '../../../platform/auth/workspace-token';
import { isoNow, type Clock, type Logger } from '../../../platform/runtime';
import type { Access } from '../access';
import { workspacesTables, type WorkspaceRow, type WorkspaceStatus, type WorkspaceType } from '../workspaces.tables';

export type WorkspaceEvent = 'created' | 'started' | 'stopped' | 'restarted' | 'deleted' | 'failed' | 'paused' | 'resumed';

export function createLifecycleRepository(deps: {
  store: Store;
  bus: Bus;
  clock: Clock;
  log: Logger;
  access: Access;
  /** Told of each event in the transaction of its change (running time for usage reports). */
  onEvent?: (tx: Orm, event: WorkspaceEvent, row: WorkspaceRow) => Promise<void>;
}) {
  const { store, clock, log, access } = deps;
  const db = store.orm;
  const { workspaces, retainedVolumes, workspaceEventOutbox } = workspacesTables(store.dialect);
  // A null status or type placeholder means "no filter" (the column equals itself: both are NOT NULL;
  // the placeholder takes the column's type). The owner's list uses the (owner, created_at) index.
  const optional = (column: typeof workspaces.status | typeof workspaces.type, name: string) =>
    sql`${column} = coalesce(${sql.placeholder(name)}, ${column})`;
  const filters = and(optional(workspaces.status, 'status'), optional(workspaces.type, 'type'));
  const order = [asc(workspaces.createdAt), asc(workspaces.id)] as const;
  const listedOwn = db
    .select()
    .from(workspaces)
    .where(and(eq(workspaces.owner, sql.placeholder('owner')), filters))
    .orderBy(...order)
    .prepare();
  const listedAll = db.select().from(workspaces).where(filters).orderBy(...order).prepare();
  const runningRows = db.select().from(workspaces).where(eq(workspaces.status, 'running')).prepare();
  const awakeRows = db.select().from(workspaces).where(inArray(workspaces.status, ['creating', 'starting', 'restarting', 'running'])).prepare();
  const activeRows = db
    .select({ engine: workspaces.engine, template: workspaces.template })
    .from(workspaces)
    .where(inArray(workspaces.status, ['creating', 'starting', 'running', 'restarting']))
    .prepare();

  const outbox = createEventOutbox({ db, table: workspaceEventOutbox, bus: deps.bus, clock, log });

  /** Writes the event of `row`'s change through `tx`, the transaction of the change. */
  async function recordEvent(tx: Orm, event: WorkspaceEvent, row: WorkspaceRow) {
    await deps.onEvent?.(tx, event, row);
    await outbox.record(tx, `evt.workspace.${event}`, {
      event: `workspace.${event}`,
      timestamp: isoNow(clock),
      owner: row.owner,
      workspace: { id: row.id, name: row.name, status: row.status, ...(row.reason ? { reason: row.reason } : {}) },
    });
  }

  /** An event with no change of the row beside it (the row is gone next, or already says it). */
  async function publish(event: WorkspaceEvent, row: WorkspaceRow) {
    await store.transaction((tx) => recordEvent(tx, event, row));
    outbox.kick();
  }

  /** Writes `set` and answers the row as written (one statement: no second read). */
  async function update(id: string, set: Partial<WorkspaceRow>, tx: Orm = db): Promise<WorkspaceRow> {
    const [row] = await tx
      .update(workspaces)
      .set({ ...set, updatedAt: isoNow(clock) })
      .where(eq(workspaces.id, id))
      .returning();
    return row!;
  }

  /** Updates the row and writes the events of the change in one transaction; the row after. */
  async function change(id: string, set: Partial<WorkspaceRow>, events: WorkspaceEvent[]): Promise<WorkspaceRow> {
    const after = await store.transaction(async (tx) => {
      const row = await update(id, set, tx);
      for (const e of events) await recordEvent(tx, e, row);
      return row;
    });
    outbox.kick();
    return after;
  }

  async function keepVolume(row: WorkspaceRow, tx: Orm = db) {
    await tx.insert(retainedVolumes).values({ volume: row.volume, workspaceId: row.id, owner: row.owner, deletedAt: isoNow(clock) }).onConflictDoNothing();
  }

  return {
    publish,
    update,
    change,
    recordEvent,
    /** Relays the events a previous run left unsent, then each new one (start-up). */
    startRelay: () => outbox.start(),
    stopRelay: () => outbox.stop(),
    /** After a transaction that called recordEvent committed. */
    relay: () => outbox.kick(),

    /** Rows the actor may see (admins: all), oldest first. */
    async list(actor: Actor, filter: { status?: WorkspaceStatus; type?: WorkspaceType }): Promise<WorkspaceRow[]> {
      const f = { status: filter.status ?? null, type: filter.type ?? null };
      return actor.admin ? listedAll.execute(f) : listedOwn.execute({ ...f, owner: actor.id });
    },

    /** Workspaces that hold or are about to hold a running container: their engine and template (placement). */
    active: () => activeRows.execute(),

    /** Every running workspace, whoever owns it (the stats sampler's round). */
    running: (): Promise<WorkspaceRow[]> => runningRows.execute(),
    /** Every workspace running or on its way to (the idle sweep's round). */
    awake: (): Promise<WorkspaceRow[]> => awakeRows.execute(),

    /** Inserts a reserved workspace's row, in the transaction that checked the actor's quotas. */
    async insert(tx: Orm, row: WorkspaceRow) {
      await tx.insert(workspaces).values(row);
    },

    /** Every host port a workspace row reserves (its three ports). */
    async reservedPorts(): Promise<number[]> {
      return (await db.select({ a: workspaces.port, b: workspaces.sshPort, c: workspaces.rdpPort }).from(workspaces)).flatMap((r) => [r.a, r.b, r.c]);
    },

    nameTaken: async (name: string): Promise<boolean> => (await db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.name, name)).limit(1)).length > 0,

    async ids(): Promise<string[]> {
      return (await db.select({ id: workspaces.id }).from(workspaces)).map((r) => r.id);
    },

    /** Ends a workspace in `failed` with the reason users read in GET. */
    async fail(id: string, reason: string, extra: Partial<WorkspaceRow> = {}) {
      if (!(await access.row(id))) return;
      await change(id, { ...extra, status: 'failed', reason }, ['failed']);
      log.warn('workspace failed', { workspace: id, reason });
    },

    /** Moves to `to` if the status is still one of `allowed` (atomically); false when it is not. */
    async moveStatus(id: string, allowed: readonly WorkspaceStatus[], to: WorkspaceStatus, tx: Orm = db): Promise<boolean> {
      const moved = await tx
        .update(workspaces)
        .set({ status: to, updatedAt: isoNow(clock) })
        .where(and(eq(workspaces.id, id), inArray(workspaces.status, [...allowed])))
        .returning({ id: workspaces.id });
      return moved.length > 0;
    },

    /** Removes the row; a volume kept on purpose is recorded, so start-up clean-up leaves it. */
    async delete(row: WorkspaceRow, volumeKept: boolean) {
      await store.transaction(async (tx) => {
        if (volumeKept) await keepVolume(row, tx);
        await tx.delete(workspaces).where(eq(workspaces.id, row.id));
        await recordEvent(tx, 'deleted', row);
      });
      outbox.kick();
    },

    /** Records `row`'s volume as kept before the delete removes the container (the quota counts it from now). */
    keepVolume,

    /** Undoes keepVolume for a delete that failed (the workspace, and its volume, are still in use). */
    async unkeepVolume(volume: string) {
      await db.delete(retainedVolumes).where(eq(retainedVolumes.volume, volume));
    },

    async retainedVolumes(): Promise<Set<string>> {
      return new Set((await db.select({ v: retainedVolumes.volume }).from(retainedVolumes)).map((r) => r.v));
    },
  };
}

export type LifecycleRepository = ReturnType<typeof createLifecycleRepository>;
