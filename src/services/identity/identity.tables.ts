// The tables the identity service owns: actors (with the hash of their one API key), sessions, and the
// hashes of every refresh token a session has been given (old ones are kept to detect reuse).
import { defineTables } from '../../platform/db-schema';
import type { IdentitySessionEndReason } from '../../platform/bus/subjects';

export const identityTables = defineTables(({ index, integer, table, text }) => {
  const actors = table('identity_actors', {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    policies: text('policies', { mode: 'json' }).$type<string[]>().notNull(),
    disabled: integer('disabled', { mode: 'boolean' }).notNull().default(false),
    /** SHA-256 (hex) of the API key; the key itself is shown once and never stored. */
    apiKeyHash: text('api_key_hash').notNull().unique(),
    /** The key's first characters, so an operator can tell keys apart. */
    apiKeyHint: text('api_key_hint').notNull(),
    /** Bumped on each key rotation / policy change: sessions made under an older version need re-authentication. */
    keyVersion: integer('key_version').notNull().default(1),
    policiesVersion: integer('policies_version').notNull().default(1),
    keyRotatedAt: integer('key_rotated_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  });

  const sessions = table(
    'identity_sessions',
    {
      id: text('id').primaryKey(),
      actorId: text('actor_id')
        .notNull()
        .references(() => actors.id, { onDelete: 'cascade' }),
      keyVersion: integer('key_version').notNull(),
      policiesVersion: integer('policies_version').notNull(),
      createdAt: integer('created_at').notNull(),
      /** Absolute end: no refresh extends a session past it. */
      expiresAt: integer('expires_at').notNull(),
      refreshedAt: integer('refreshed_at'),
      revokedAt: integer('revoked_at'),
      endReason: text('end_reason').$type<IdentitySessionEndReason>(),
    },
    (t) => [index('identity_sessions_actor_idx').on(t.actorId), index('identity_sessions_expires_idx').on(t.expiresAt)],
  );

  const refreshTokens = table(
    'identity_refresh_tokens',
    {
      /** SHA-256 (hex) of the opaque refresh token. */
      hash: text('hash').primaryKey(),
      sessionId: text('session_id')
        .notNull()
        .references(() => sessions.id, { onDelete: 'cascade' }),
      createdAt: integer('created_at').notNull(),
      expiresAt: integer('expires_at').notNull(),
      /** Set when exchanged: presenting it again is reuse, and revokes the session. */
      usedAt: integer('used_at'),
    },
    (t) => [index('identity_refresh_tokens_session_idx').on(t.sessionId)],
  );
  return { actors, sessions, refreshTokens };
});

export const { actors, sessions, refreshTokens } = identityTables('sqlite');

export type ActorRow = typeof actors.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;
