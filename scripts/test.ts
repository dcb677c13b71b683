// `npm test`: makes the machine ready (scripts/machine.ts), then runs the whole suite with `bun test`.
// No test is skipped for a missing dependency: if one cannot be set up, this fails saying why.
import { spawn } from 'node:child_process';
import { prepareMachine } from './machine';

const machine = await prepareMachine();
// A per-test limit that leaves room for engine work on a busy 2-core machine (bun's default is 5 s).
const test = spawn(process.execPath, ['test', '--timeout', '30000', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'test', ...machine.env },
});
const code: number = await new Promise((resolve) => test.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
machine.stop();
process.exit(code);
