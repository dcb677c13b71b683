// Every query of the catalog's works, editions, assets, indexes and relations (the scan's filing, the
// reads of GET /works..., qry.catalog.playable, local metadata), tables resolved once. A query takes
// `tx` where it runs in the scan's transaction. The works pager's keyset reads are here too
// (works-pager.ts keeps its marks).
import { and, asc, count, desc, eq, inArray, isNull, like, sql, type SQL } from 'drizzle-orm';
import type { Orm, Store } from '../../platform/store';
import type { WorksFilter } from './catalog.model';
import { catalogTables, type catalogAssets, type catalogMediaIndexes, type catalogRelations, type catalogWorks } from './catalog.tables';
import { libraryTables } from './library/library.tables';
import { queryWords } from './search';

export type AssetRow = typeof catalogAssets.$inferSelect;
export type IndexRow = typeof catalogMediaIndexes.$inferSelect;
export type WorkRow = typeof catalogWorks.$inferSelect;
export type RelationRow = typeof catalogRelations.$inferSelect;
type Tx = Orm;

export function createCatalogRepository(store: Store) {
  const db = store.orm;
  const { catalogWorks, catalogEditions, catalogAssets, catalogMediaIndexes, catalogRelations, catalogEventOutbox } = catalogTables(store.dialect);
  const { libraryFiles } = libraryTables(store.dialect);

  /** The WHERE of a works filter; null when the filter can match nothing (a query of no letters or digits). */
  function worksWhere(filter: WorksFilter): SQL[] | null {
    const where: SQL[] = [];
    if (filter.q !== undefined) {
      const words = queryWords(filter.q);
      if (words.length === 0) return null;
      // Folded words hold letters and digits only: nothing in them is a LIKE wildcard.
      for (const w of words) where.push(like(catalogWorks.searchText, `% ${w}%`));
    }
    if (filter.kind !== undefined) where.push(eq(catalogWorks.kind, filter.kind));
    if (filter.year !== undefined) where.push(eq(catalogWorks.year, filter.year));
    if (filter.genre !== undefined) {
      const g = queryWords(filter.genre).join(' ');
      if (!g) return null;
      where.push(like(catalogWorks.genreKey, `%|${g}|%`));
    }
    return where;
  }

  return {
    /** The outbox table of the catalog's durable events (platform/bus/event-outbox.ts). */
    eventOutbox: catalogEventOutbox,
    transaction: <T>(body: (tx: Tx) => Promise<T>) => store.transaction(body),

    // Works
    work: async (id: string, tx: Tx = db): Promise<WorkRow | undefined> => (await tx.select().from(catalogWorks).where(eq(catalogWorks.id, id)))[0],
    workByMatchKey: async (tx: Tx, key: string): Promise<WorkRow | undefined> => (await tx.select().from(catalogWorks).where(eq(catalogWorks.matchKey, key)))[0],
    async insertWork(tx: Tx, row: WorkRow): Promise<void> {
      await tx.insert(catalogWorks).values(row);
    },
    async updateWork(tx: Tx, id: string, fields: Partial<Omit<WorkRow, 'id'>>): Promise<void> {
      await tx.update(catalogWorks).set(fields).where(eq(catalogWorks.id, id));
    },
    /**
     * Works matching `filter`, oldest first, with their total; null when the filter can match nothing.
     * (With no filter GET /works pages through works-pager.ts instead.)
     */
    async filteredWorks(filter: WorksFilter, page: number, pageSize: number): Promise<{ total: number; rows: WorkRow[] } | null> {
      const where = worksWhere(filter);
      if (!where) return null;
      const cond = and(...where);
      const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(catalogWorks).where(cond);
      const rows = await db.select().from(catalogWorks).where(cond).orderBy(asc(catalogWorks.createdAt), asc(catalogWorks.id)).limit(pageSize).offset((page - 1) * pageSize);
      return { total: Number(n), rows };
    },
    /** Whether the filter has any term (an empty one pages all works). */
    filters: (filter: WorksFilter) => filter.q !== undefined || filter.kind !== undefined || filter.year !== undefined || filter.genre !== undefined,
    /** Up to `limit` works whose search column was never filled. */
    worksWithoutSearch: (limit: number) =>
      db.select({ id: catalogWorks.id, title: catalogWorks.title, originalTitle: catalogWorks.originalTitle }).from(catalogWorks).where(eq(catalogWorks.searchText, '')).limit(limit),

    // Relations
    async insertRelation(tx: Tx, row: RelationRow): Promise<void> {
      await tx.insert(catalogRelations).values(row).onConflictDoNothing();
    },
    /** The parent of `childId` by `rel`, if it has one. */
    parentOf: async (tx: Tx, childId: string, rel: string): Promise<string | undefined> =>
      (await tx.select({ id: catalogRelations.parentWorkId }).from(catalogRelations).where(and(eq(catalogRelations.childWorkId, childId), eq(catalogRelations.rel, rel))))[0]?.id,
    /** The relations whose `side` is one of `ids`. */
    relationsOf: (side: 'childWorkId' | 'parentWorkId', ids: string[]): Promise<RelationRow[]> => db.select().from(catalogRelations).where(inArray(catalogRelations[side], ids)),

    // Editions
    editionOf: async (tx: Tx, workId: string, kind: string): Promise<string | undefined> =>
      (await tx.select({ id: catalogEditions.id }).from(catalogEditions).where(and(eq(catalogEditions.workId, workId), eq(catalogEditions.kind, kind))).limit(1))[0]?.id,
    edition: async (id: string) => (await db.select().from(catalogEditions).where(eq(catalogEditions.id, id)))[0],
    /** The work an edition is of (null for a workless one). */
    workOfEdition: async (tx: Tx, editionId: string): Promise<string | null> =>
      (await tx.select({ w: catalogEditions.workId }).from(catalogEditions).where(eq(catalogEditions.id, editionId)))[0]?.w ?? null,
    async insertEdition(tx: Tx, row: { id: string; workId: string | null; kind: string; createdAt: number; updatedAt: number }): Promise<void> {
      await tx.insert(catalogEditions).values(row);
    },
    /** Removes a workless edition once no asset is filed under it. */
    async dropEmptyWorklessEdition(tx: Tx, id: string): Promise<void> {
      const [left] = await tx.select({ n: count() }).from(catalogAssets).where(eq(catalogAssets.editionId, id));
      if (left?.n === 0) await tx.delete(catalogEditions).where(and(eq(catalogEditions.id, id), isNull(catalogEditions.workId)));
    },

    // Assets and their indexes
    assetAt: async (tx: Tx, root: number, path: string): Promise<AssetRow | undefined> =>
      (await tx.select().from(catalogAssets).where(and(eq(catalogAssets.root, root), eq(catalogAssets.path, path))))[0],
    async insertAsset(tx: Tx, row: AssetRow): Promise<void> {
      await tx.insert(catalogAssets).values(row);
    },
    async updateAsset(tx: Tx, id: string, fields: Partial<Omit<AssetRow, 'id'>>): Promise<void> {
      await tx.update(catalogAssets).set(fields).where(eq(catalogAssets.id, id));
    },
    indexOf: async (tx: Tx, assetId: string): Promise<IndexRow | undefined> => (await tx.select().from(catalogMediaIndexes).where(eq(catalogMediaIndexes.assetId, assetId)))[0],
    async insertIndex(tx: Tx, row: IndexRow): Promise<void> {
      await tx.insert(catalogMediaIndexes).values(row);
    },
    async updateIndex(tx: Tx, id: string, row: IndexRow): Promise<void> {
      await tx.update(catalogMediaIndexes).set(row).where(eq(catalogMediaIndexes.id, id));
    },
    async deleteIndex(tx: Tx, id: string): Promise<void> {
      await tx.delete(catalogMediaIndexes).where(eq(catalogMediaIndexes.id, id));
    },
    /** A work's assets with their index and availability: indexed first, then the newest. */
    workAssets: (workId: string) =>
      db
        .select({ asset: catalogAssets, index: catalogMediaIndexes, available: libraryFiles.available })
        .from(catalogAssets)
        .innerJoin(catalogEditions, eq(catalogEditions.id, catalogAssets.editionId))
        .leftJoin(catalogMediaIndexes, eq(catalogMediaIndexes.assetId, catalogAssets.id))
        .leftJoin(libraryFiles, eq(libraryFiles.assetId, catalogAssets.id))
        .where(eq(catalogEditions.workId, workId))
        .orderBy(desc(sql`${catalogMediaIndexes.id} IS NOT NULL`), desc(catalogAssets.createdAt), desc(catalogAssets.id)),
    /** An asset and its index, if any (qry.catalog.playable). */
    playable: async (assetId: string): Promise<{ asset: AssetRow; index: IndexRow | null } | undefined> =>
      (
        await db
          .select({ asset: catalogAssets, index: catalogMediaIndexes })
          .from(catalogAssets)
          .leftJoin(catalogMediaIndexes, eq(catalogMediaIndexes.assetId, catalogAssets.id))
          .where(eq(catalogAssets.id, assetId))
      )[0],
  };
}

export type CatalogRepository = ReturnType<typeof createCatalogRepository>;

type Mark = { createdAt: number; id: string };

/**
 * The keyset reads of works-pager.ts, prepared once (`execute` answers rows on both databases): the
 * total, the first key, the key `skip` entries of the covering (created_at, id) index after a key
 * (reading no row of the table), and a page from its exact first key (an OFFSET would read every
 * skipped row too).
 */
export function createWorksKeys(store: Store) {
  const db = store.orm;
  const { catalogWorks } = catalogTables(store.dialect);
  const order = [asc(catalogWorks.createdAt), asc(catalogWorks.id)] as const;
  const atOrAfter = sql`(${catalogWorks.createdAt}, ${catalogWorks.id}) >= (${sql.placeholder('createdAt')}, ${sql.placeholder('id')})`;
  const key = { createdAt: catalogWorks.createdAt, id: catalogWorks.id };
  const total = db.select({ n: count() }).from(catalogWorks).prepare();
  const firstKey = db.select(key).from(catalogWorks).orderBy(...order).limit(1).prepare();
  const keyAfter = db.select(key).from(catalogWorks).where(atOrAfter).orderBy(...order).limit(1).offset(sql.placeholder('skip')).prepare();
  const pageFrom = db.select().from(catalogWorks).where(atOrAfter).orderBy(...order).limit(sql.placeholder('limit')).prepare();
  return {
    total: async () => Number((await total.execute())[0]?.n ?? 0),
    first: async (): Promise<Mark | undefined> => (await firstKey.execute())[0],
    after: async (from: Mark, skip: number): Promise<Mark | undefined> => (await keyAfter.execute({ ...from, skip }))[0],
    pageFrom: (from: Mark, limit: number): Promise<WorkRow[]> => pageFrom.execute({ ...from, limit }),
  };
}
