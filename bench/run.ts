// `bun run bench [name...]`: runs every bench/*.bench.ts (or the named ones) in one run, one after
// the other so they do not compete for the two cores, and writes the figures to bench/results.json.
// The machine is prepared as for `npm test` (dockerd, nats-server); each benchmark runs in its own
// process with that environment, so one cannot skew another's memory figures.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareTestMachine } from '../scripts/machine';

const machine = await prepareTestMachine();
const only = process.argv.slice(2);
const files = readdirSync(import.meta.dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
const results: Record<string, unknown> = { at: new Date().toISOString(), cpus: navigator.hardwareConcurrency, bun: Bun.version };
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-'));
let failed = false;
for (const f of files) {
  console.log(`\n# ${f}`);
  const name = f.replace('.bench.ts', '');
  const out = join(scratch, `${name}.json`);
  const script = `const { run } = await import(${JSON.stringify(join(import.meta.dir, f))}); await Bun.write(process.env.BENCH_OUT, JSON.stringify(await run()));`;
  const proc = Bun.spawn([process.execPath, '-e', script], {
    cwd: join(import.meta.dir, '..'),
    env: { APP_LOG_LEVEL: 'warn', ...process.env, ...machine.env, BENCH_OUT: out },
    stdout: 'inherit',
    stderr: 'inherit',
  });
  if ((await proc.exited) === 0) results[name] = JSON.parse(readFileSync(out, 'utf8'));
  else {
    failed = true;
    console.error(`${f} failed (exit ${proc.exitCode})`);
    results[name] = { error: `exit ${proc.exitCode}` };
  }
}
rmSync(scratch, { recursive: true, force: true });
writeFileSync(join(import.meta.dir, 'results.json'), JSON.stringify(results, null, 2) + '\n');
console.log('\nwrote bench/results.json');
machine.stop();
process.exit(failed ? 1 : 0);
