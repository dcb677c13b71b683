// `npm test`: runs the suite with `bun test` and ends with one line, "N passed, N failed". The
// machine is made ready by bun's test preload (tests/helpers/preload.ts, scripts/machine.ts), so a
// plain `bun test` does the same; no test is skipped for a missing dependency: if one cannot be set
// up, the run fails saying why.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const reportDir = mkdtempSync(join(tmpdir(), 'keel-test-report-'));
const report = join(reportDir, 'junit.xml');
// A per-test limit that leaves room for engine work on a busy 2-core machine (bun's default is 5 s).
const test = spawn(process.execPath, ['test', '--timeout', '30000', '--reporter=junit', `--reporter-outfile=${report}`, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'test' },
});
const code: number = await new Promise((resolve) => test.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));

// One plain closing line that any CI can read: "N passed, N failed".
try {
  const head = /<testsuites[^>]*>/.exec(readFileSync(report, 'utf8'))?.[0] ?? '';
  const count = (attr: string) => Number(new RegExp(`${attr}="(\\d+)"`).exec(head)?.[1] ?? 0);
  const failed = count('failures');
  const skipped = count('skipped');
  process.stdout.write(`\n${count('tests') - failed - skipped} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
} catch {
  // No report (bun failed before running tests): its own output and the exit code say why.
}
rmSync(reportDir, { recursive: true, force: true });
process.exit(code);
