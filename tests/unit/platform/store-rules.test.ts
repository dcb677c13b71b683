// Every service runs on SQLite and on PostgreSQL (platform/store.ts), which holds only while service
// code keeps to what both share. The suite's PostgreSQL pass finds most slips, but not in code it
// does not reach; this reads the sources for the calls that exist on one dialect only.
import { expect, test } from 'bun:test';
import { Glob } from 'bun';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..', '..', '..');

/** What only bun:sqlite's Drizzle has, or SQLite itself: each with why it is refused. */
const SQLITE_ONLY: [RegExp, string][] = [
  // (the template and kind registries have an `all()` of their own)
  [/(?<!\b(registry|kinds))\.(get|all|run)\(\)/, 'a synchronous query (.get()/.all()/.run()): await the query instead'],
  [/\$client\b/, 'the raw driver ($client): SQLite and PostgreSQL drivers differ'],
  [/from 'bun:sqlite'/, 'bun:sqlite itself'],
  [/\bdeps\.db\b/, 'the SQLite-only database handle: use deps.store'],
  [/\b(json_extract|unixepoch|strftime|total_changes|PRAGMA)\b/, 'SQLite-only SQL'],
];

test('service code uses only what SQLite and PostgreSQL share', () => {
  const found: string[] = [];
  for (const file of new Glob('src/services/**/*.ts').scanSync(ROOT)) {
    // Browser code (the dashboard's, the media web app's) never touches a database.
    if (file.includes('/client/')) continue;
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.trimStart().startsWith('//') || line.trimStart().startsWith('*')) return;
        for (const [re, why] of SQLITE_ONLY) if (re.test(line)) found.push(`${file}:${i + 1}: ${why}`);
      });
  }
  expect(found).toEqual([]);
});
