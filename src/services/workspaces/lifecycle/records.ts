// The stored side of a workspace: the row updates every lifecycle step makes, and the bus event
// published after each committed change (a failing subscriber never reaches us: bus contract).
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Bus } from '../../../platform/bus/bus';
import type { Db } from '../../../platform/db';
import type { Actor } from '../../../platform/auth/workspace-token';
import { errorFields, isoNow, type Clock, type Logger } from '../../../platform/runtime';
import type { Access } from '../access';
import { retainedVolumes, workspaces, type WorkspaceRow, type WorkspaceStatus, type WorkspaceType } from '../workspaces.tables';

export type WorkspaceEvent = 'created' | 'started' | 'stopped' | 'restarted' | 'deleted' | 'failed';

export function createRecords(deps: { db: Db; bus: Bus; clock: Clock; log: Logger; access: Access }) {
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

  function publish(event: WorkspaceEvent, row: WorkspaceRow) {
    const payload = {
      event: `workspace.${event}`,
      timestamp: isoNow(clock),
      owner: row.owner,
      workspace: { id: row.id, name: row.name, status: row.status, ...(row.reason ? { reason: row.reason } : {}) },
    };
    void deps.bus.publish(`evt.workspace.${event}`, payload).catch((e) => log.warn('publish failed', errorFields(e)));
  }

  /** Writes `set` and answers the row as written (one statement: no second read). */
  function update(id: string, set: Partial<WorkspaceRow>): WorkspaceRow {
    return db.update(workspaces)
      .set({ ...set, updatedAt: isoNow(clock) })
      .where(eq(workspaces.id, id))
      .returning()
      .get()!;
  }

  return {
    publish,
    update,

    /** Rows the actor may see (admins: all), oldest first. */
    list(actor: Actor, filter: { status?: WorkspaceStatus; type?: WorkspaceType }): WorkspaceRow[] {
      const f = { status: filter.status ?? null, type: filter.type ?? null };
      return actor.admin ? listedAll.all(f) : listedOwn.all({ ...f, owner: actor.id });
    },

    /** Every running workspace, whoever owns it (the stats sampler's round). */
    running: (): WorkspaceRow[] => runningRows.all(),

    ids(): string[] {
      return db.select({ id: workspaces.id }).from(workspaces).all().map((r) => r.id);
    },

    /** Ends a workspace in `failed` with the reason users read in GET. */
    fail(id: string, reason: string, extra: Partial<WorkspaceRow> = {}) {
      if (!access.row(id)) return;
      const after = update(id, { ...extra, status: 'failed', reason });
      log.warn('workspace failed', { workspace: id, reason });
      publish('failed', after);
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
      });
      publish('deleted', row);
    },

    retainedVolumes(): Set<string> {
      return new Set(db.select({ v: retainedVolumes.volume }).from(retainedVolumes).all().map((r) => r.v));
    },
  };
}

export type Records = ReturnType<typeof createRecords>;
