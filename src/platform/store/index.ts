// The Store, one handle over SQLite or PostgreSQL (store.ts says the rules): import it from here.
export type { Orm, Store } from './store';
export { sqliteStore } from './sqlite';
export { openPostgresStore } from './postgres';
export { coalescedVersion } from './changes';
