// The workers' job queue: jobs per second through submit -> claim -> finish, on the database queue
// (SQLite, the embedded default: the baseline; and PostgreSQL) and on the JetStream work queue (a private
// nats-server with JetStream), both through the JobQueue interface the runner uses. No handler
// runs: this is what the queue itself costs per job. Two claimers take jobs at once, as two
// worker processes would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryBus } from '../src/platform/bus/memory';
import { createNatsBus } from '../src/platform/bus/nats';
import { openDb } from '../src/platform/db';
import { createLogger, systemClock } from '../src/platform/runtime';
import { openPostgresStore, sqliteStore } from '../src/platform/store';
import { freshPostgresDatabase } from '../tests/helpers/platform';
import type { JobQueue } from '../src/services/workers/queue';
import { createJetStreamQueue } from '../src/services/workers/queue-jetstream';
import { createWorkers } from '../src/services/workers/workers.service';
import { startTestNats } from '../tests/helpers/nats';
import { printTable, round } from './lib';

const quiet = createLogger({}, 'error');

async function throughput(queue: JobQueue, n: number) {
  const payload = { scanId: 'scn_bench', targets: [{ root: 0, folder: '' }] };
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await queue.submit({ type: 'library.scan', payload, tenant: `t${i % 4}` });
  const submitted = performance.now();
  let done = 0;
  const worker = async (id: string) => {
    for (;;) {
      const row = await queue.claim(id, 30_000);
      if (!row) return;
      await queue.finish(row.id, id, { status: 'done' });
      done++;
    }
  };
  await Promise.all([worker('bench-a'), worker('bench-b')]);
  const end = performance.now();
  if (done !== n) throw new Error(`${done} of ${n} jobs ran`);
  return { submitPerSec: Math.round(n / ((submitted - t0) / 1000)), claimFinishPerSec: Math.round(n / ((end - submitted) / 1000)), jobsPerSec: Math.round(n / ((end - t0) / 1000)) };
}

export async function run(): Promise<Record<string, unknown>> {
  const n = Number(process.env.BENCH_JOBS_N ?? 500);
  const results: Record<string, any> = { jobs: n };

  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-jobs-'));
  const mem = createMemoryBus(quiet);
  const db = openDb(dir);
  try {
    results.sqlite = await throughput(createWorkers({ store: sqliteStore(db), bus: mem, clock: systemClock, log: quiet, onSubmit: () => {} }), n);
  } finally {
    await mem.close();
    db.$client.close();
    rmSync(dir, { recursive: true, force: true });
  }

  // The same database queue on PostgreSQL (the test run's private cluster, a database of its own).
  const pg = await freshPostgresDatabase();
  const pgStore = await openPostgresStore(pg.url);
  const pgBus = createMemoryBus(quiet);
  try {
    results.postgres = await throughput(createWorkers({ store: pgStore, bus: pgBus, clock: systemClock, log: quiet, onSubmit: () => {} }), n);
  } finally {
    await pgBus.close();
    await pgStore.close();
    await pg.drop();
  }

  const nats = await startTestNats();
  const bus = await createNatsBus(nats.url, quiet);
  const queue = await createJetStreamQueue({ url: nats.url, bus, clock: systemClock, log: quiet, leaseMs: 30_000, onSubmit: () => {} });
  try {
    results.jetstream = await throughput(queue, n);
  } finally {
    await queue.close?.();
    await bus.close();
    await nats.close();
  }
  results.ratios = {
    jetstreamJobsVsSqlite: round(results.jetstream.jobsPerSec / results.sqlite.jobsPerSec, 3),
    postgresJobsVsSqlite: round(results.postgres.jobsPerSec / results.sqlite.jobsPerSec, 3),
  };
  printTable(`job queue, ${n} jobs (submit, then two claimers claim and finish)`, [
    { queue: 'sqlite (database)', ...results.sqlite },
    { queue: 'postgresql (database)', ...results.postgres },
    { queue: 'jetstream', ...results.jetstream },
  ]);
  return results;
}
