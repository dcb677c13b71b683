// Watch state: one row per actor and asset, the last position they reported and when.
import { defineTables } from '../../../platform/db-schema';

export const progressTables = defineTables(({ index, integer, primaryKey, table, text }) => {
  const playbackProgress = table(
    'playback_progress',
    {
      actorId: text('actor_id').notNull(),
      assetId: text('asset_id').notNull(),
      positionMs: integer('position_ms').notNull(),
      /** The asset's duration when the position was reported: `played` is past 90 % of it. */
      durationMs: integer('duration_ms').notNull(),
      played: integer('played', { mode: 'boolean' }).notNull(),
      updatedAt: integer('updated_at').notNull(),
    },
    (t) => [primaryKey({ columns: [t.actorId, t.assetId] }), index('playback_progress_recent').on(t.actorId, t.updatedAt)],
  );
  return { playbackProgress };
});

export const { playbackProgress } = progressTables('sqlite');
export type ProgressRow = typeof playbackProgress.$inferSelect;
