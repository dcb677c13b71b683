// Runs before any test file (bunfig.toml `[test] preload`), so `bun test`, `bun test tests/<folder>`
// and `npm test` (scripts/test.ts, which only adds a report) prepare the machine alike: apt packages,
// a Docker engine and a nats-server with a password (scripts/machine.ts), once per run. A run that asks
// only for the tiers that need no machine (tests/unit, tests/service: `npm run test:unit`,
// `npm run test:service`) skips it: they need no engine, no NATS, no PostgreSQL, no apt.
import { afterAll } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { MachineError, prepareTestMachine } from '../../scripts/machine';
import { runBunImageTag } from './once';

const ROOT = join(import.meta.dir, '..', '..');
/** The tiers that run on nothing but bun: pure modules, and services on a temp SQLite file, memory bus and engine. */
export const MACHINE_FREE_DIRS = ['tests/unit', 'tests/service'];

/** Per-test limit: engine work on a busy 2-core machine needs more than bun's 5 s default. */
export const TEST_TIMEOUT_MS = 30_000;

/** The arguments after `test` of this `bun test` command line (bun's preload sees no argv of its own). */
function testArgs(): string[] {
  let argv: string[];
  try {
    argv = readFileSync('/proc/self/cmdline', 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
  const at = argv.indexOf('test');
  return at < 0 ? [] : argv.slice(at + 1);
}

/** Its path filters: anything that is not an option, so an option's value (`-t name`) only errs towards preparing. */
const pathFilters = (args: string[]) => args.filter((a) => !a.startsWith('-') && !/^\d+$/.test(a));

/** True when every filter names something under a machine-free tier (no filter at all means the whole suite). */
export function onlyMachineFreeRequested(filters: string[], cwd = process.cwd()): boolean {
  if (filters.length === 0) return false;
  return filters.every((f) => {
    const rel = relative(ROOT, isAbsolute(f) ? f : join(cwd, f));
    return MACHINE_FREE_DIRS.some((dir) => rel === dir || rel.startsWith(`${dir}/`));
  });
}

const args = testArgs();
const machineFree = onlyMachineFreeRequested(pathFilters(args));

// bun keeps a preload's setDefaultTimeout() for the first test file only (oven-sh/bun#43787) and reads
// no timeout from bunfig, so a `bun test` without --timeout runs itself again with it (the machine is
// prepared in that run only). `npm test` passes it; the machine-free tiers' tests need no more than 5 s.
if (!machineFree && !args.some((a) => a === '--timeout' || a.startsWith('--timeout='))) {
  const again = Bun.spawn([process.execPath, 'test', '--timeout', String(TEST_TIMEOUT_MS), ...args], { stdio: ['inherit', 'inherit', 'inherit'] });
  process.exit(await again.exited);
}

// This run's directory and id (tests/helpers/once.ts: the binary and the image made once per run).
const runDir = (process.env.KEEL_TEST_RUN_DIR = mkdtempSync(join(tmpdir(), 'keel-run-')));
process.env.KEEL_TEST_RUN_ID = `${Date.now().toString(36)}${process.pid.toString(36)}`;
afterAll(() => rmSync(runDir, { recursive: true, force: true }));

if (!machineFree) {
  const machine = await prepareTestMachine().catch((e) => {
    if (!(e instanceof MachineError)) throw e;
    process.stderr.write(`keel: cannot prepare the test machine: ${e.message}\n`);
    process.exit(1);
  });
  process.stderr.write(`keel: engine ${machine.engine.host} (${machine.engine.origin})\n`);
  Object.assign(process.env, machine.env);
  // A preload's afterAll runs once, after the last file (bun emits no 'exit' to a preload's listeners).
  afterAll(() => {
    machine.stop();
    // The run's bun-typescript image, if a file asked for it (once.ts); the engine is shared and kept.
    Bun.spawnSync(['docker', 'rmi', '-f', runBunImageTag()], { env: process.env, stdout: 'ignore', stderr: 'ignore' });
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      machine.stop();
      process.exit(130);
    });
  }
}
