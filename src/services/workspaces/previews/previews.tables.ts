// Preview links (a workspace port reached through Keel's preview listener) and the last activity
// seen on each workspace through it, which the idle stop (a later issue) reads.
import { defineTables } from '../../../platform/db-schema';

export const previewsTables = defineTables(({ index, integer, table, text }) => {
  const workspacePreviews = table(
    'workspaces_previews',
    {
      id: text('id').primaryKey(),
      workspaceId: text('workspace_id').notNull(),
      owner: text('owner').notNull(),
      port: integer('port').notNull(),
      /** sha256 of the URL's secret (its host's label): what a request is looked up by. `url` is kept for the owner's list. */
      tokenHash: text('token_hash').notNull().unique(),
      url: text('url').notNull(),
      expiresAt: text('expires_at').notNull(),
      revokedAt: text('revoked_at'),
      createdAt: text('created_at').notNull(),
    },
    (t) => [index('workspaces_previews_workspace_idx').on(t.workspaceId, t.createdAt)],
  );

  /** Last time anything reached the workspace through Keel (preview traffic), at most one write a second per workspace. */
  const workspaceActivity = table('workspaces_activity', {
    workspaceId: text('workspace_id').primaryKey(),
    lastActivityAt: text('last_activity_at').notNull(),
  });
  return { workspacePreviews, workspaceActivity };
});

export const { workspacePreviews, workspaceActivity } = previewsTables('sqlite');

export type PreviewRow = typeof workspacePreviews.$inferSelect;
