// Entry of the compiled binary: `keel` serves every service; `keel token ...` and other commands run the CLI.
import { CLI_COMMANDS, runCli } from './cli';
import { serve } from './main';

const [cmd] = process.argv.slice(2);
if (cmd && (CLI_COMMANDS.includes(cmd) || cmd === 'help' || cmd === '--help')) {
  await runCli(cmd === '--help' ? ['help'] : process.argv.slice(2)).catch((e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  });
} else if (cmd && cmd !== 'serve') {
  process.stderr.write(`unknown command ${JSON.stringify(cmd).slice(0, 40)}; try: keel serve | keel token --sub <actor>\n`);
  process.exit(2);
} else {
  await serve();
}
