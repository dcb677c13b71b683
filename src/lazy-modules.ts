// Start-up: parts of dependencies Keel rarely needs, loaded when first called instead of with their
// package. dockerode loads gRPC (+24 MB resident, for BuildKit sessions, which Keel does not open)
// and ssh2 (+6 MB, for ssh:// engine hosts) as it loads; each is one exported function, which this
// wraps so that the module's body runs on the first call (docs/benchmarks.md, start-up). Applied at
// run time from source (main.ts) and at build time in the binary (scripts/build.ts).
import type { BunPlugin } from 'bun';
import { readFileSync } from 'node:fs';

/** dockerode's BuildKit session (gRPC) and docker-modem's SSH agent (ssh2): each exports one function. */
// In node_modules, or in Bun's install cache (`dockerode@5.0.1@@@1/lib/...`) that node_modules links to.
const DEFERRED = /[\\/](dockerode(@[^\\/]*)?[\\/]lib[\\/]session|docker-modem(@[^\\/]*)?[\\/]lib[\\/]ssh)\.js$/;

/**
 * The module's own text, run on the first call with its own `require` (same file, same resolution).
 * Bun's runtime reads a plugin's text as ESM, where the `"module.exports"` export name is what
 * `require()` answers; the bundler reads CommonJS as such and knows no such name.
 */
const deferred = (source: string, bundling: boolean) => `let loaded;
function load() {
  if (!loaded) {
    const module = { exports: {} };
    (function (module, exports) {
${source}
    })(module, module.exports);
    loaded = module.exports;
  }
  return loaded;
}
const deferredCall = function () {
  return load().apply(this, arguments);
};
${bundling ? 'module.exports = deferredCall;' : 'export { deferredCall as "module.exports" };'}
`;

/** `bundling`: for Bun.build (scripts/build.ts); else for Bun.plugin at run time (main.ts). */
export const deferRarelyUsedModules = (opts: { bundling: boolean }): BunPlugin => ({
  name: 'keel-defer-rarely-used-modules',
  setup(build) {
    build.onLoad({ filter: DEFERRED }, ({ path }) => ({ loader: 'js', contents: deferred(readFileSync(path, 'utf8'), opts.bundling) }));
  },
});
