// The tables the workspaces service owns: a workspace, its owner, its reserved host ports and the
// container/volume that back it. Status is the last state settled from the engine (or an operation in flight).
import { defineTables } from '../../platform/db-schema';
import { eventOutboxTable } from '../../platform/bus/outbox-table';

export const WORKSPACE_STATUSES = ['creating', 'starting', 'running', 'stopping', 'stopped', 'restarting', 'failed', 'paused'] as const;
export type WorkspaceStatus = (typeof WORKSPACE_STATUSES)[number];
export type WorkspaceType = 'persistent' | 'temporary';

export const workspacesTables = defineTables((t) => {
  const { index, integer, real, table, text } = t;
  const workspaces = table(
    'workspaces_workspaces',
    {
      id: text('id').primaryKey(),
      /** Unique across all owners (the spec: "unique among workspaces"). */
      name: text('name').notNull().unique(),
      owner: text('owner').notNull(),
      template: text('template').notNull(),
      type: text('type').$type<WorkspaceType>().notNull(),
      status: text('status').$type<WorkspaceStatus>().notNull(),
      /** Host ports published on the bind address: code server, ssh, rdp. */
      port: integer('port').notNull().unique(),
      sshPort: integer('ssh_port').notNull().unique(),
      rdpPort: integer('rdp_port').notNull().unique(),
      containerId: text('container_id'),
      /** The APP_ENGINES engine the workspace was placed on, for good; null: the first engine (rows from before). */
      engine: text('engine'),
      volume: text('volume').notNull(),
      /** Set once the container exists with its repo copied in: a failed workspace can then be started again. */
      provisioned: integer('provisioned', { mode: 'boolean' }).notNull().default(false),
      /** Repo URL with any credentials removed; the raw URL is never stored. */
      repoUrl: text('repo_url'),
      repoBranch: text('repo_branch'),
      /** Why the workspace is `failed` (engine or git message, secrets scrubbed). */
      reason: text('reason'),
      /** Minutes without activity after which a running workspace is stopped (0: never); fractions allowed. */
      autoStopMinutes: real('auto_stop_minutes').notNull().default(0),
      /** Why Keel stopped the workspace on its own (`idle`); cleared when it runs again. */
      stopReason: text('stop_reason').$type<'idle'>(),
      /** The snapshot it was made from (its image and volume archive), or null: from the template. */
      snapshotId: text('snapshot_id'),
      createdAt: text('created_at').notNull(),
      updatedAt: text('updated_at').notNull(),
    },
    (t) => [index('workspaces_workspaces_owner_idx').on(t.owner, t.createdAt)],
  );


  /**
   * Snapshots: the container's file system committed to `image` plus the volume as a tar in the data
   * dir (`snapshots/<id>.tar`). Written after both exist, so a crash leaves only objects without a
   * row, which start-up removes.
   */
  const snapshots = table(
    'workspaces_snapshots',
    {
      id: text('id').primaryKey(),
      name: text('name').notNull(),
      owner: text('owner').notNull(),
      workspaceId: text('workspace_id').notNull(),
      template: text('template').notNull(),
      image: text('image').notNull(),
      sizeBytes: integer('size_bytes').notNull(),
      createdAt: text('created_at').notNull(),
    },
    (t) => [index('workspaces_snapshots_owner_idx').on(t.owner, t.createdAt)],
  );


  /**
   * Volumes a delete kept on purpose (a persistent workspace deleted without `volumes=true`): the
   * start-up clean-up of this instance's objects without a workspace leaves these alone.
   */
  const retainedVolumes = table('workspaces_retained_volumes', {
    volume: text('volume').primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    owner: text('owner').notNull(),
    deletedAt: text('deleted_at').notNull(),
  });

  /**
   * evt.workspace.* events, written in the transaction of the state change they report and relayed to
   * the bus afterwards (platform/bus/event-outbox.ts): a crash at any moment loses none.
   */
  const workspaceEventOutbox = eventOutboxTable(t, 'workspaces_event_outbox');
  return { workspaces, snapshots, retainedVolumes, workspaceEventOutbox };
});

export const { workspaces, snapshots, retainedVolumes, workspaceEventOutbox } = workspacesTables('sqlite');

export type WorkspaceRow = typeof workspaces.$inferSelect;
export type SnapshotRow = typeof snapshots.$inferSelect;
