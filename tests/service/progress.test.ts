// Watch state's queries on a temp SQLite file (migrated as at start-up): the upsert per report, the
// actor's newest first, continue watching. The HTTP rules with the catalog and identity are in
// tests/playback/progress.test.ts (both databases); these run in milliseconds.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from '../../src/platform/db';
import { sqliteStore } from '../../src/platform/store';
import { createProgressRepository, type ProgressRepository } from '../../src/services/playback/progress/progress.repository';

let dir: string;
let repo: ProgressRepository;
let close: () => void;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-progress-'));
  const db = openDb(dir);
  repo = createProgressRepository(sqliteStore(db));
  close = () => db.$client.close();
});
afterAll(() => {
  close();
  rmSync(dir, { recursive: true, force: true });
});

const row = (actorId: string, assetId: string, positionMs: number, updatedAt: number, played = false) => ({ actorId, assetId, positionMs, durationMs: 10_000, played, updatedAt });

describe('progress repository', () => {
  test('a second report of the same asset replaces the first', async () => {
    await repo.put(row('a', 'ast_1', 100, 1));
    await repo.put(row('a', 'ast_1', 900, 2));
    expect(await repo.list('a', { inProgress: false, limit: 10 })).toEqual([row('a', 'ast_1', 900, 2)]);
  });

  test('lists newest first, at most the limit, and only the actor\'s own', async () => {
    await repo.put(row('a', 'ast_2', 50, 5));
    await repo.put(row('a', 'ast_3', 9500, 4, true));
    await repo.put(row('b', 'ast_9', 10, 9));
    expect((await repo.list('a', { inProgress: false, limit: 10 })).map((r) => r.assetId)).toEqual(['ast_2', 'ast_3', 'ast_1']);
    expect((await repo.list('a', { inProgress: false, limit: 2 })).map((r) => r.assetId)).toEqual(['ast_2', 'ast_3']);
  });

  test('continue watching keeps what is started and not played', async () => {
    await repo.put(row('a', 'ast_4', 0, 6));
    expect((await repo.list('a', { inProgress: true, limit: 10 })).map((r) => r.assetId)).toEqual(['ast_2', 'ast_1']);
  });
});
