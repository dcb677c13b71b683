// Preview links (a workspace port reached through Keel's preview listener) and the last activity
// seen on each workspace through it, which the idle stop (a later issue) reads.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const workspacePreviews = sqliteTable(
  'workspaces_previews',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    owner: text('owner').notNull(),
    port: integer('port').notNull(),
    /** sha256 of the URL's secret: the secret itself is shown once, in the create answer. */
    tokenHash: text('token_hash').notNull().unique(),
    url: text('url').notNull(),
    expiresAt: text('expires_at').notNull(),
    revokedAt: text('revoked_at'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('workspaces_previews_workspace_idx').on(t.workspaceId, t.createdAt)],
);
export type PreviewRow = typeof workspacePreviews.$inferSelect;

/** Last time anything reached the workspace through Keel (preview traffic), at most one write a second per workspace. */
export const workspaceActivity = sqliteTable('workspaces_activity', {
  workspaceId: text('workspace_id').primaryKey(),
  lastActivityAt: text('last_activity_at').notNull(),
});
