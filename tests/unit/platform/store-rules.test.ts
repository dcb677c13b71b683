// What the Store's contract suite (tests/platform/store-contract.test.ts) cannot see: whether service
// code keeps to the Store. A service that calls a driver directly, or branches on the database,
// works on the database of the suite that reaches it and fails on the other; only its source says so.
import { expect, test } from 'bun:test';
import { Glob } from 'bun';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..', '..', '..');

/** Each pattern refused in service code, with what to use instead. */
const REFUSED: [RegExp, string][] = [
  // Driver calls that exist on one database only (the template and kind registries have an `all()` of their own).
  [/(?<!\b(registry|kinds))\.(get|all|run)\(\)/, 'a synchronous bun:sqlite query (.get()/.all()/.run()): await the query'],
  [/\$client\b/, 'the raw driver ($client): the two drivers differ'],
  [/from '(bun:sqlite|drizzle-orm\/(pg-core|sqlite-core|bun-sql|bun-sqlite))'/, "a dialect's driver or builders: tables come from defineTables, queries from the Store's orm"],
  [/\bdeps\.db\b/, 'the SQLite-only database handle: use deps.store'],
  // A branch on the database, or SQL one of them lacks: each is a Store method (or a builder of defineTables).
  [/\bdialect\s*[!=]==|[!=]==\s*'(postgres|sqlite)'/, 'a branch on the database: make it a Store method'],
  [/\.for\(\s*'update'|\bSKIP LOCKED\b|\bFOR UPDATE\b/i, 'row locks: store.forClaim(select)'],
  [/UNIQUE constraint failed|SQLITE_CONSTRAINT|\b23505\b/, 'matching a unique violation: store.isUniqueViolation(e, on?)'],
  [/\b(json_extract|unixepoch|strftime|total_changes|PRAGMA|ILIKE)\b/, 'SQL one database lacks'],
];

test('service code keeps to what the Store offers on both databases', () => {
  const found: string[] = [];
  for (const file of new Glob('src/services/**/*.ts').scanSync(ROOT)) {
    // Browser code (the dashboard's, the media web app's) never touches a database.
    if (file.includes('/client/')) continue;
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const code = line.trimStart();
        if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
        for (const [re, why] of REFUSED) if (re.test(line)) found.push(`${file}:${i + 1}: ${why}`);
      });
  }
  expect(found).toEqual([]);
});

// Queries live in each feature's <feature>.repository.ts (tables resolved there once); services, routes
// and the rest build none.
const QUERIES_ALLOWED = /\.(repository|tables)\.ts$/;

test("no module outside a feature's repository builds queries", () => {
  const found: string[] = [];
  for (const file of new Glob('src/services/**/*.ts').scanSync(ROOT)) {
    if (file.includes('/client/') || QUERIES_ALLOWED.test(file)) continue;
    if (/from 'drizzle-orm'/.test(readFileSync(join(ROOT, file), 'utf8'))) found.push(file);
  }
  expect(found).toEqual([]);
});
