// The dashboard's files: built by Bun's bundler from client/index.html (the HTML, its script and the
// chunks it loads on demand, one stylesheet, names hashed). `bun run build` builds them once and
// embeds them in the single binary (scripts/build.ts defines KEEL_UI_ASSETS); from source (npm run
// dev, tests) they are built in memory on first use, a fraction of a second.
import { join } from 'node:path';

declare const KEEL_UI_ASSETS: string | undefined;

export interface UiAsset {
  type: string;
  body: string;
}

/** Where the hashed files are served; the HTML refers to them by this prefix. */
export const ASSET_PREFIX = '/ui/assets/';
export const INDEX = 'index.html';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** Builds the client: file name → contents (index.html and the hashed script and stylesheet). */
export async function buildUiAssets(): Promise<Record<string, UiAsset>> {
  const result = await Bun.build({
    entrypoints: [join(import.meta.dir, 'client', 'index.html')],
    target: 'browser',
    minify: true,
    // Chunks for what the page imports only when needed (xterm.js behind the Terminal view).
    splitting: true,
    publicPath: ASSET_PREFIX,
    naming: { entry: '[name].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
  });
  if (!result.success) throw new AggregateError(result.logs, 'the dashboard did not build');
  const files: Record<string, UiAsset> = {};
  for (const out of result.outputs) {
    const name = out.path.replace(/^.*\//, '');
    const ext = name.slice(name.lastIndexOf('.'));
    files[name] = { type: TYPES[ext] ?? 'application/octet-stream', body: await out.text() };
  }
  if (!files[INDEX]) throw new Error('the dashboard build has no index.html');
  return files;
}

let loading: Promise<Record<string, UiAsset>> | undefined;

/** The embedded files in the binary, else a build from source (once per process). */
export function uiAssets(): Promise<Record<string, UiAsset>> {
  if (typeof KEEL_UI_ASSETS === 'string') return Promise.resolve(JSON.parse(KEEL_UI_ASSETS) as Record<string, UiAsset>);
  return (loading ??= buildUiAssets());
}
