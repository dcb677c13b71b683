// The private Docker engine of `npm run dev`, by hand: `bun scripts/engine.ts status|start|stop [dir]`
// (dir defaults to $APP_DATA_DIR/engine, i.e. ./data/engine). `npm run engine:stop` stops the one
// dev left running; its images, containers and volumes stay in dir/root for the next start.
import { resolve } from 'node:path';
import { MachineError, devEngineDir, engineAnswers, ensureEngine, privateEngineLayout, stopPrivateEngine } from './machine';

const [cmd, dirArg] = process.argv.slice(2);
const dir = dirArg ? resolve(dirArg) : devEngineDir(process.env.APP_DATA_DIR || './data');
const layout = privateEngineLayout(dir);
try {
  if (cmd === 'status') {
    const up = await engineAnswers(layout.host);
    process.stdout.write(`${up ? 'answers' : 'not running'}: ${layout.host} (data in ${layout.dataRoot})\n`);
    process.exit(up ? 0 : 3);
  } else if (cmd === 'start') {
    const e = await ensureEngine({ dir, findRunning: false });
    process.stdout.write(`${e.host} (${e.origin})\n`);
  } else if (cmd === 'stop') {
    process.stdout.write((await stopPrivateEngine(dir)) ? `stopped the private dockerd in ${dir}\n` : `no private dockerd runs in ${dir}\n`);
  } else {
    process.stderr.write('usage: bun scripts/engine.ts status|start|stop [dir]\n');
    process.exit(2);
  }
} catch (e) {
  if (!(e instanceof MachineError)) throw e;
  process.stderr.write(`keel: ${e.message}\n`);
  process.exit(1);
}
