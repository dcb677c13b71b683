// The database's change counter: one value that moves whenever any committed write could change
// what a read answers. Caches of reads (platform/http/response-cache.ts, the catalog's page index)
// keep their work while it stays the same. It lives here, at the database, so that invalidation is
// in one place and no write path can forget it: a new route, a lifecycle step or a library scan
// that writes a row moves it without knowing a cache exists.
import type { Database } from 'bun:sqlite';

/**
 * `total_changes()` counts the rows this connection inserted, updated or deleted since it opened
 * (the Store's writes outside transactions, all services); `data_version` moves when another
 * connection commits to the file (the Store's transactions, which run on a connection of their own,
 * another Keel process on the same data dir, or a tool). Together they change on every committed
 * write anyone makes, and never on a transaction's uncommitted rows: a read that saw none cannot be
 * cached under a version they moved. Too eager at worst, never too late. Two statements
 * rather than one SELECT over the pragma_data_version() table function: ~1.9 us against ~2.9 us, on
 * every cached read. Nearly all of it is `PRAGMA data_version`, which takes a read lock to look;
 * total_changes() alone is ~0.1 us but would miss a commit by another process on the same data dir
 * (and SQLITE_FCNTL_DATA_VERSION, cheaper still, is only brought up to date when a transaction starts).
 */
export function dbVersion(client: Database): () => string {
  const dataVersion = client.prepare<{ data_version: number }, []>('PRAGMA data_version');
  const changes = client.prepare<[number], []>('SELECT total_changes()');
  return () => `${dataVersion.get()!.data_version}.${changes.values()[0]![0]}`;
}
