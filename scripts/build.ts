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
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${outfile} (${commit})`);
