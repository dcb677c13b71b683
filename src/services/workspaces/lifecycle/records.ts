// The stored side of a workspace: the row updates every lifecycle step makes, and the bus event of
// each change, written in the same transaction (an outbox row) and relayed once committed, so a
// crash at any moment loses no event of a change that happened (platform/bus/event-outbox.ts).
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Bus } from '../../../platform/bus/bus';
import { createEventOutbox } from '../../../platform/bus/event-outbox';
import type { Db } from '../../../platform/db';
import type { Actor } from '../../../platform/auth/workspace-token';
import { isoNow, type Clock, type Logger } from '../../../platform/runtime';
import type { Access } from '../access';
import { retainedVolumes, workspaceEventOutbox, workspaces, type WorkspaceRow, type WorkspaceStatus, type WorkspaceType } from '../workspaces.tables';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type WorkspaceEvent = 'created' | 'started' | 'stopped' | 'restarted' | 'deleted' | 'failed' | 'paused' | 'resumed';

export function createRecords(deps: {
  db: Db;
  bus: Bus;
  clock: Clock;
  log: Logger;
  access: Access;
  /** Told of each event in the transaction of its change (running time for usage reports). */
  onEvent?: (tx: Tx | Db, event: WorkspaceEvent, row: WorkspaceRow) => void;
}) {
  const { db, clock, log, access } = deps;
  // A null status or type placeholder means "no filter". The owner's list uses the (owner, created_at) index.
  const optional = (column: typeof workspaces.status | typeof workspaces.type, name: string) =>
    sql`(${sql.placeholder(name)} IS NULL OR ${column} = ${sql.placeholder(name)})`;
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
  function recordEvent(tx: Tx | Db, event: WorkspaceEvent, row: WorkspaceRow) {
    deps.onEvent?.(tx, event, row);
    outbox.recordSync(tx, `evt.workspace.${event}`, {
      event: `workspace.${event}`,
      timestamp: isoNow(clock),
      owner: row.owner,
      workspace: { id: row.id, name: row.name, status: row.status, ...(row.reason ? { reason: row.reason } : {}) },
    });
  }

  /** An event with no change of the row beside it (the row is gone next, or already says it). */
  function publish(event: WorkspaceEvent, row: WorkspaceRow) {
    recordEvent(db, event, row);
    outbox.kick();
  }

  /** Writes `set` and answers the row as written (one statement: no second read). */
  function update(id: string, set: Partial<WorkspaceRow>): WorkspaceRow {
    return db.update(workspaces)
      .set({ ...set, updatedAt: isoNow(clock) })
      .where(eq(workspaces.id, id))
      .returning()
      .get()!;
  }

  /** Updates the row and writes the events of the change in one transaction; the row after. */
  function change(id: string, set: Partial<WorkspaceRow>, events: WorkspaceEvent[]): WorkspaceRow {
    const after = db.transaction((tx) => {
      const row = update(id, set);
      for (const e of events) recordEvent(tx, e, row);
      return row;
    });
    outbox.kick();
    return after;
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
    list(actor: Actor, filter: { status?: WorkspaceStatus; type?: WorkspaceType }): WorkspaceRow[] {
      const f = { status: filter.status ?? null, type: filter.type ?? null };
      return actor.admin ? listedAll.all(f) : listedOwn.all({ ...f, owner: actor.id });
    },

    /** Workspaces that hold or are about to hold a running container: their engine and template (placement). */
    active: () => activeRows.all(),

    /** Every running workspace, whoever owns it (the stats sampler's round). */
    running: (): WorkspaceRow[] => runningRows.all(),
    /** Every workspace running or on its way to (the idle sweep's round). */
    awake: (): WorkspaceRow[] => awakeRows.all(),

    nameTaken: (name: string): boolean => !!db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.name, name)).get(),

    ids(): string[] {
      return db.select({ id: workspaces.id }).from(workspaces).all().map((r) => r.id);
    },

    /** Ends a workspace in `failed` with the reason users read in GET. */
    fail(id: string, reason: string, extra: Partial<WorkspaceRow> = {}) {
      if (!access.row(id)) return;
      change(id, { ...extra, status: 'failed', reason }, ['failed']);
      log.warn('workspace failed', { workspace: id, reason });
    },

    /** Moves to `to` if the status is still one of `allowed` (atomically); false when it is not. */
    moveStatus(id: string, allowed: readonly WorkspaceStatus[], to: WorkspaceStatus): boolean {
      const res = db
        .update(workspaces)
        .set({ status: to, updatedAt: isoNow(clock) })
        .where(and(eq(workspaces.id, id), inArray(workspaces.status, [...allowed])))
        .run() as unknown as { changes: number };
      return res.changes > 0;
    },

    /** Removes the row; a volume kept on purpose is recorded, so start-up clean-up leaves it. */
    delete(row: WorkspaceRow, volumeKept: boolean) {
      db.transaction((tx) => {
        if (volumeKept) {
          tx.insert(retainedVolumes).values({ volume: row.volume, workspaceId: row.id, owner: row.owner, deletedAt: isoNow(clock) }).onConflictDoNothing().run();
        }
        tx.delete(workspaces).where(eq(workspaces.id, row.id)).run();
        recordEvent(tx, 'deleted', row);
      });
      outbox.kick();
    },

    /** Records `row`'s volume as kept before the delete removes the container (the quota counts it from now). */
    keepVolume(row: WorkspaceRow) {
      db.insert(retainedVolumes).values({ volume: row.volume, workspaceId: row.id, owner: row.owner, deletedAt: isoNow(clock) }).onConflictDoNothing().run();
    },

    /** Undoes keepVolume for a delete that failed (the workspace, and its volume, are still in use). */
    unkeepVolume(volume: string) {
      db.delete(retainedVolumes).where(eq(retainedVolumes.volume, volume)).run();
    },

    retainedVolumes(): Set<string> {
      return new Set(db.select({ v: retainedVolumes.volume }).from(retainedVolumes).all().map((r) => r.v));
    },
  };
}

export type Records = ReturnType<typeof createRecords>;
