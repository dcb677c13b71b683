// `bun run build`: one executable (bun build --compile) carrying every service and its migrations.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dir, '..');
const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout?.trim() || 'unknown';
const outfile = process.argv[2] ?? join(root, 'dist', 'keel');

const result = await Bun.build({
  entrypoints: [join(root, 'src', 'bin.ts')],
  compile: { outfile },
  target: 'bun',
  minify: true,
  sourcemap: 'linked',
  define: { KEEL_COMMIT: JSON.stringify(commit) },
  // Optional native add-ons of ssh2 (under dockerode): loaded in a try, absent when their install
  // scripts are not allowed (package.json allowScripts), and not needed for a unix-socket engine.
  external: ['cpu-features'],
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${outfile} (${commit})`);
