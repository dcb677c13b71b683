// Tables written once for both databases. A service's *.tables.ts defines its tables inside
// `defineTables((t) => ...)` with the builders of `t`, named and typed as drizzle's SQLite ones, so
// the file reads as plain Drizzle; for PostgreSQL the same definition builds pg-core tables
// (integers as bigint, booleans as boolean, JSON text as jsonb, autoincrement as bigserial). The
// SQLite tables are what the code is typed against: queries written with them run unchanged on the
// PostgreSQL tables as long as they use what both dialects share (see platform/store/store.ts).
import { sql, type SQL } from 'drizzle-orm';
import * as pg from 'drizzle-orm/pg-core';
import * as sqlite from 'drizzle-orm/sqlite-core';

export type Dialect = 'sqlite' | 'postgres';

/** The builders a table definition gets: drizzle's SQLite ones, or stand-ins building pg-core columns. */
export interface TableBuilders {
  table: typeof sqlite.sqliteTable;
  text: typeof sqlite.text;
  integer: typeof sqlite.integer;
  real: typeof sqlite.real;
  index: typeof sqlite.index;
  uniqueIndex: typeof sqlite.uniqueIndex;
  primaryKey: typeof sqlite.primaryKey;
  /**
   * The term "boolean `column` is true" of a partial index's predicate, as each database writes it
   * (SQLite keeps booleans as 0/1, and its planner uses a partial index only for a query whose own
   * terms imply the index's: drizzle's `eq(column, true)` binds 1 there, which matches `column = 1`).
   */
  isTrue(column: string): SQL;
}

const sqliteBuilders: TableBuilders = {
  table: sqlite.sqliteTable,
  text: sqlite.text,
  integer: sqlite.integer,
  real: sqlite.real,
  index: sqlite.index,
  uniqueIndex: sqlite.uniqueIndex,
  primaryKey: sqlite.primaryKey,
  isTrue: (column) => sql.raw(`${column} = 1`), // (a column name of the definition, never input)
};

type Options = { mode?: string; enum?: readonly string[] };

const postgresBuilders = {
  table: pg.pgTable,
  text: (name: string, o?: Options) => (o?.mode === 'json' ? pg.jsonb(name) : pg.text(name)),
  integer: (name: string, o?: Options) => {
    if (o?.mode === 'boolean') return pg.boolean(name);
    // Epoch milliseconds and byte counts pass 2^31: every integer is a bigint read as a JS number.
    const column = pg.bigint(name, { mode: 'number' });
    const primaryKey = column.primaryKey.bind(column);
    // SQLite's `primaryKey({ autoIncrement: true })` is a bigserial here.
    return Object.assign(column, {
      primaryKey: (pk?: { autoIncrement?: boolean }) => (pk?.autoIncrement ? pg.bigserial(name, { mode: 'number' }).primaryKey() : primaryKey()),
    });
  },
  real: pg.doublePrecision,
  index: pg.index,
  uniqueIndex: pg.uniqueIndex,
  primaryKey: pg.primaryKey,
  isTrue: (column: string) => sql.raw(column),
} as unknown as TableBuilders;

/**
 * A service's tables for either database: `define` runs once per dialect asked for, so each dialect
 * has one set of table objects (drizzle compares tables by identity).
 */
export function defineTables<T>(define: (t: TableBuilders, dialect: Dialect) => T): (dialect: Dialect) => T {
  const made = new Map<Dialect, T>();
  return (dialect) => {
    let tables = made.get(dialect);
    if (!tables) made.set(dialect, (tables = define(dialect === 'postgres' ? postgresBuilders : sqliteBuilders, dialect)));
    return tables;
  };
}
