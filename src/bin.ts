// Entry of the compiled binary: `keel` alone serves every service (as `keel serve`); any other command
// line is the CLI's (src/cli.ts: token, healthcheck, image, --help, --version; ws and login from the SDK).
import { cliFailed, runCli } from './cli';

const argv = process.argv.slice(2);
await runCli(argv.length ? argv : ['serve']).catch(cliFailed);
