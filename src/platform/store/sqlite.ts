// The SQLite Store: the data dir's file, transactions on a connection of their own, writes in turns.
import { connect, type Db } from '../db';
import { dbVersion } from '../db-version';
import { causes, onWrites, type Store } from './store';
import { createWriteTurns } from './writer-queue';

/**
 * The SQLite database of the data dir (db.ts) as a Store; close() closes the file. Transactions run
 * on a second connection to the same file (WAL): statements outside one run on the first and see only
 * what was committed, and a rollback there cannot reach them. SQLite lets one connection write at a
 * time, and bun:sqlite waits for a lock by blocking the thread (which would stop the very transaction
 * it waits for), so a write outside waits its turn (createWriteTurns) while a transaction is open;
 * reads never wait.
 */
export function sqliteStore(db: Db): Store {
  const client = db.$client;
  const txDb = connect(client.filename);
  const txClient = txDb.$client;
  const turns = createWriteTurns();
  let inTurn = false; // a write outside a transaction is running in its turn (drizzle's all() calls values())
  onWrites(db, (prepared) => {
    for (const method of ['run', 'all', 'get', 'values'] as const) {
      const run = prepared[method]!.bind(prepared);
      prepared[method] = (...args) => {
        if (turns.idle || inTurn) return run(...args);
        return turns.take(() => {
          inTurn = true;
          try {
            return run(...args);
          } finally {
            inTurn = false;
          }
        });
      };
    }
  });
  return {
    dialect: 'sqlite',
    orm: db,
    transaction(body) {
      // Drizzle's own SQLite transaction would commit at the body's first await, so BEGIN and COMMIT are ours.
      return turns.take(async () => {
        txClient.exec('BEGIN IMMEDIATE');
        try {
          const result = await body(txDb);
          txClient.exec('COMMIT');
          return result;
        } catch (e) {
          if (txClient.inTransaction) txClient.exec('ROLLBACK');
          throw e;
        }
      });
    },
    lock: async () => {},
    claim: async () => true,
    isUniqueViolation: sqliteUniqueViolation,
    // One writer at a time, and a single statement is atomic: its subquery's row cannot be claimed meanwhile.
    forClaim: (select) => select,
    // On the first connection: its data_version moves when the transactions' connection commits.
    version: dbVersion(client),
    async close() {
      await turns.take(() => undefined);
      txClient.close();
      client.close();
    },
  };
}

/**
 * SQLite: bun:sqlite's error has code SQLITE_CONSTRAINT_UNIQUE (or _PRIMARYKEY) and the message
 * "UNIQUE constraint failed: table.column[, table.column...]", naming the index's columns.
 */
function sqliteUniqueViolation(e: unknown, on?: { table: string; column: string }): boolean {
  for (const x of causes(e)) {
    const message = String(x.message ?? '');
    const unique = x.code === 'SQLITE_CONSTRAINT_UNIQUE' || x.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || message.includes('UNIQUE constraint failed');
    if (!unique) continue;
    if (!on) return true;
    const columns = /UNIQUE constraint failed: (.*)$/.exec(message)?.[1]?.split(', ');
    return columns?.length === 1 && columns[0] === `${on.table}.${on.column}`;
  }
  return false;
}

