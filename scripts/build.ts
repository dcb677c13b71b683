// `bun run build`: one executable (bun build --compile) carrying every service and its migrations, the
// dashboard's and the media web app's built files (KEEL_UI_ASSETS, KEEL_MEDIA_APP_ASSETS), the API
// reference's script (a file import) and keeld, the workspace daemon (an asset: Bun.embeddedFiles).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { buildUiAssets } from '../src/services/workspaces/ui/ui.assets';
import { buildMediaAppAssets } from '../src/services/playback/app/app.assets';
import { buildDaemon } from './daemon';
import { deferRarelyUsedModules } from '../src/lazy-modules';

const root = join(import.meta.dir, '..');
const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout?.trim() || 'unknown';
const outfile = process.argv[2] ?? join(root, 'dist', 'keel');

// The dashboard is built first and carried as one constant: a few tens of kB of HTML, JS and CSS.
const ui = await buildUiAssets();
const mediaApp = await buildMediaAppAssets();

const keeld = buildDaemon();

const result = await Bun.build({
  entrypoints: [join(root, 'src', 'bin.ts')],
  compile: { outfile, assets: [keeld] },
  target: 'bun',
  minify: true,
  // Chunks per dynamic import: the entry binds the services' ports before the rest is even parsed
  // (one bundle is parsed whole first: /health answered after ~130 ms instead of ~20 ms).
  splitting: true,
  sourcemap: 'linked',
  define: { KEEL_COMMIT: JSON.stringify(commit), KEEL_UI_ASSETS: JSON.stringify(JSON.stringify(ui)), KEEL_MEDIA_APP_ASSETS: JSON.stringify(JSON.stringify(mediaApp)) },
  // Optional native add-ons of ssh2 (under dockerode): loaded in a try, absent when their install
  // scripts are not allowed (package.json allowScripts), and not needed for a unix-socket engine.
  external: ['cpu-features'],
  // dockerode's gRPC and SSH parts run on first use, as from source (src/lazy-modules.ts).
  plugins: [deferRarelyUsedModules({ bundling: true })],
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${outfile} (${commit})`);
