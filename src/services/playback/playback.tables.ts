// The table the playback service owns: one row per session, so its URL can be ended before it
// expires (DELETE /sessions/{id}) and followed to the identity session that opened it.
import { defineTables } from '../../platform/db-schema';

export const playbackTables = defineTables(({ index, integer, table, text }) => {
  const playbackSessions = table(
    'playback_sessions',
    {
      id: text('id').primaryKey(),
      /** The actor whose access token opened it: the only one who may end it. */
      actorId: text('actor_id').notNull(),
      /** The identity session of that token: the URL ends when it is revoked (CONTRACT.md, wave 4). */
      identitySessionId: text('identity_session_id').notNull(),
      assetId: text('asset_id').notNull(),
      mode: text('mode').$type<'direct' | 'hls'>().notNull(),
      createdAt: integer('created_at').notNull(),
      expiresAt: integer('expires_at').notNull(),
      /** Set by DELETE /sessions/{id}: the URL answers 410 from then on. */
      endedAt: integer('ended_at'),
    },
    (t) => [index('playback_sessions_expires_idx').on(t.expiresAt)],
  );
  return { playbackSessions };
});

export const { playbackSessions } = playbackTables('sqlite');

export type PlaybackSessionRow = typeof playbackSessions.$inferSelect;
