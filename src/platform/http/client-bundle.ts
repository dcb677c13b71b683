// The browser apps Keel serves (the workspaces dashboard, the media web app): each built by Bun's
// bundler from its client/index.html (the HTML, its script and the chunks it loads on demand, one
// stylesheet, names hashed). `bun run build` builds them once and embeds them in the single binary
// (scripts/build.ts); from source (npm run dev, tests) they are built in memory on first use.
export interface ClientFile {
  type: string;
  body: string;
}
export type ClientFiles = Record<string, ClientFile>;

export const INDEX = 'index.html';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** Builds one app: file name → contents (index.html and the hashed scripts and stylesheet), served under `publicPath`. */
export async function bundleClient(entry: string, publicPath: string, what: string): Promise<ClientFiles> {
  const result = await Bun.build({
    entrypoints: [entry],
    target: 'browser',
    minify: true,
    // Chunks for what a page imports only when needed (xterm.js behind the Terminal view, hls.js behind Play).
    splitting: true,
    publicPath,
    naming: { entry: '[name].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
  });
  if (!result.success) throw new AggregateError(result.logs, `${what} did not build`);
  const files: ClientFiles = {};
  for (const out of result.outputs) {
    const name = out.path.replace(/^.*\//, '');
    const ext = name.slice(name.lastIndexOf('.'));
    files[name] = { type: TYPES[ext] ?? 'application/octet-stream', body: await out.text() };
  }
  if (!files[INDEX]) throw new Error(`${what} has no index.html`);
  return files;
}

/** The files embedded in the binary (a JSON constant), else one build from source per process. */
export function clientFiles(embedded: string | undefined, build: () => Promise<ClientFiles>): () => Promise<ClientFiles> {
  let loading: Promise<ClientFiles> | undefined;
  return () => (typeof embedded === 'string' ? Promise.resolve(JSON.parse(embedded) as ClientFiles) : (loading ??= build()));
}
