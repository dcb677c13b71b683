// The sources service's table: SourceBindings, where each asset can be read from.
import { defineTables } from '../../platform/db-schema';

export const sourcesTables = defineTables(({ index, integer, table, text, uniqueIndex }) => {
  const sourcesBindings = table(
    'sources_bindings',
    {
      id: text('id').primaryKey(),
      assetId: text('asset_id').notNull(),
      /** 'file' today (a file under a media root of the catalog's media engine); a remote URL later. */
      kind: text('kind').notNull(),
      root: integer('root').notNull(),
      path: text('path').notNull(),
      available: integer('available', { mode: 'boolean' }).notNull(),
      /** When an event last told us about the file (the event's own time, so a late redelivery changes nothing). */
      checkedAt: integer('checked_at').notNull(),
      /** Higher first among available bindings of one asset. */
      preference: integer('preference').notNull(),
      createdAt: integer('created_at').notNull(),
      updatedAt: integer('updated_at').notNull(),
    },
    (t) => [uniqueIndex('sources_bindings_location').on(t.assetId, t.kind, t.root, t.path), index('sources_bindings_asset').on(t.assetId)],
  );
  return { sourcesBindings };
});

export const { sourcesBindings } = sourcesTables('sqlite');
