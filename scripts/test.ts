// `npm test`: runs the suite with `bun test` and ends with one line, "N passed, N failed". The
// machine is made ready by bun's test preload (tests/helpers/preload.ts, scripts/machine.ts), so a
// plain `bun test` does the same; no test is skipped for a missing dependency: if one cannot be set
// up, the run fails saying why.
//
// The whole suite (no arguments) runs in two passes: everything on the embedded SQLite, and the
// suites of the services that keep their state in PostgreSQL when asked (APP_DATABASE_URL) again
// with KEEL_TEST_DATABASE=postgres, each test platform on a fresh database of the run's cluster.
// They run in two lanes side by side, since most of the suite waits on the engine: the SQLite pass
// in one; in the other the PostgreSQL pass (about 5 minutes), then the SQLite suites that mostly wait
// on clocks (SIDE_SUITES). Each `bun test` has its own NATS, PostgreSQL, Keel binary and port blocks;
// what they share (packages, the daemon's binary, the engine) is made first, once.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MachineError, prepareTestEngine } from './machine';

/**
 * The suites run again on PostgreSQL: every one of the media services (but POSTGRES_SKIPS), and of the
 * workspaces service those whose work is mostly its database (the rest of its suite is engine work, the
 * same on both).
 * tests/unit and tests/service run in the SQLite pass only: tests/service builds its services on a
 * temp SQLite file by design, and the suites below cover the same behaviours on PostgreSQL.
 */
export const POSTGRES_SUITES = [
  'tests/catalog',
  'tests/identity',
  'tests/sources',
  'tests/workers',
  'tests/platform/store-writes-kept.test.ts',
  'tests/playback/progress.test.ts',
  'tests/workspaces/postgres.test.ts',
  'tests/workspaces/quotas',
  'tests/workspaces/readpath.test.ts',
  'tests/workspaces/usage.test.ts',
  'tests/workspaces/webhooks/api.test.ts',
  'tests/workspaces/events',
  'tests/workspaces/agent/sessions.test.ts',
  'tests/workspaces/agent/quotas.test.ts',
  'tests/workspaces/agent/turns.test.ts',
];

/** Suites under those folders that never reach a database (the media readers against ffprobe). */
export const POSTGRES_SKIPS = ['tests/catalog/native-probe.test.ts', 'tests/catalog/media-engine.test.ts'];

/** SQLite-pass suites that mostly wait on timers (retries, backoff, idle clocks): run in the second lane. */
export const SIDE_SUITES = ['tests/workspaces/webhooks', 'tests/workspaces/lifecycle/idle-stop.test.ts'];

/** bun's flags that leave out these files and folders. */
const ignoring = (paths: string[]) => paths.map((path) => `--path-ignore-patterns=${path}`);

// KEEL_TEST_REPORTS=<dir> keeps each pass's junit report there (per-test times), else a temp dir.
const keep = process.env.KEEL_TEST_REPORTS;
const reportDir = keep ? (mkdirSync(keep, { recursive: true }), keep) : mkdtempSync(join(tmpdir(), 'keel-test-report-'));

/** One `bun test` run; its exit code and its counts from the junit report. `log`: its output goes there, not to ours. */
async function pass(name: string, args: string[], env: Record<string, string>, log?: string) {
  const report = join(reportDir, `${name}.xml`);
  const out = log ? openSync(log, 'w') : 'inherit';
  // A per-test limit that leaves room for engine work on a busy 2-core machine (bun's default is 5 s).
  const test = spawn(process.execPath, ['test', '--timeout', '30000', '--reporter=junit', `--reporter-outfile=${report}`, ...args], {
    stdio: ['ignore', out, out],
    env: { ...process.env, NODE_ENV: 'test', ...env },
  });
  const code: number = await new Promise((resolve) => test.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
  if (typeof out === 'number') closeSync(out);
  let counts = { tests: 0, failures: 0, skipped: 0, failed: [] as string[] };
  try {
    const xml = readFileSync(report, 'utf8');
    const head = /<testsuites[^>]*>/.exec(xml)?.[0] ?? '';
    const count = (attr: string) => Number(new RegExp(`${attr}="(\\d+)"`).exec(head)?.[1] ?? 0);
    counts = { tests: count('tests'), failures: count('failures'), skipped: count('skipped'), failed: failedTests(xml) };
  } catch {
    // No report (bun failed before running tests): its own output and the exit code say why.
  }
  return { name, code, ...counts };
}

/** Each failed test of a junit report as "file > group > name: first lines of its message". */
function failedTests(xml: string) {
  const attr = (tag: string, name: string) => decode(new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1] ?? '');
  const out: string[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*[^/])>\s*<failure\b([^>]*)>/g)) {
    const message = attr(m[2]!, 'message').split('\n').filter((l) => l.trim()).slice(0, 4).join(' | ');
    out.push(`${attr(m[1]!, 'file')} > ${attr(m[1]!, 'classname')} > ${attr(m[1]!, 'name')}: ${message}`);
  }
  return out;
}

function decode(s: string) {
  return s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
    .replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

const args = process.argv.slice(2);
const passes: Awaited<ReturnType<typeof pass>>[] = [];
if (args.length > 0) passes.push(await pass('sqlite', args, {}));
else {
  const engine = await prepareTestEngine().catch((e) => {
    if (!(e instanceof MachineError)) throw e;
    process.stderr.write(`keel: cannot prepare the test machine: ${e.message}\n`);
    process.exit(1);
  });
  const shared = { DOCKER_HOST: engine.host };
  const log = (name: string) => join(reportDir, `${name}.log`);
  const second = (async () => [
    await pass('postgres', [...POSTGRES_SUITES, ...ignoring(POSTGRES_SKIPS)], { ...shared, KEEL_TEST_DATABASE: 'postgres' }, log('postgres')),
    await pass('sqlite-side', SIDE_SUITES, shared, log('sqlite-side')),
  ])();
  passes.push(await pass('sqlite', ignoring(SIDE_SUITES), shared));
  passes.push(...(await second));
  // The second lane's output after the first's, whole, so a CI log reads as if they ran one after the other.
  process.stdout.write('\nThe SQLite suites that mostly wait on timers, run beside the rest:\n');
  process.stdout.write(readFileSync(log('sqlite-side'), 'utf8'));
  process.stdout.write('\nThe services written for both databases, again on PostgreSQL:\n');
  process.stdout.write(readFileSync(log('postgres'), 'utf8'));
}

// The failed tests again at the end, where a CI that keeps only the tail of a log still shows them, then one
// plain closing line that any CI can read: "N passed, N failed".
const failures = passes.flatMap((p) => p.failed.map((f) => `  ${p.name}: ${f}`));
if (failures.length) process.stdout.write(`\nFailed:\n${failures.join('\n')}\n`);
const sum = (k: 'tests' | 'failures' | 'skipped') => passes.reduce((n, p) => n + p[k], 0);
const [tests, failed, skipped] = [sum('tests'), sum('failures'), sum('skipped')];
if (tests > 0) process.stdout.write(`\n${tests - failed - skipped} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
if (!keep) rmSync(reportDir, { recursive: true, force: true });
process.exit(passes.find((p) => p.code !== 0)?.code ?? 0);
