// `npm run dev`: makes this machine ready (scripts/machine.ts, the same code `npm test` uses),
// then runs the platform (src/main.ts) with DOCKER_HOST set to the engine it found or started.
// A private dockerd it starts lives in $APP_DATA_DIR/engine and is left running on purpose when
// dev stops, so the next `npm run dev` reuses it at once; `npm run engine:stop` stops it.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { MachineError, prepareDevMachine } from './machine';

const dataDir = resolve(process.env.APP_DATA_DIR || './data');
const engine = await prepareDevMachine(dataDir).catch((e) => {
  if (!(e instanceof MachineError)) throw e;
  process.stderr.write(`keel: cannot prepare this machine: ${e.message}\n`);
  process.exit(1);
});

const child = spawn(process.execPath, [resolve(import.meta.dir, '../src/main.ts'), ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, APP_DATA_DIR: dataDir, DOCKER_HOST: engine.host, KEEL_ENGINE_ORIGIN: engine.origin },
});
// Ctrl-C reaches the platform directly (same process group), so dev only waits for it to finish;
// a SIGTERM sent to dev alone (a service manager) is passed on. Passing SIGINT on too would make
// it a second signal, which the platform takes as "stop now".
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, sig) => process.exit(code ?? (sig ? 1 : 0)));
