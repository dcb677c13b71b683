// Builds dist/: tsc compiles src/ to ESM with .d.ts; the generated schema types are copied beside
// them (tsc does not copy .d.ts sources); bin.js is made executable.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
// The repository's tsc when in a checkout, else one on PATH.
const local = [join(here, 'node_modules/.bin/tsc'), join(here, '../../node_modules/.bin/tsc')].find((p) => existsSync(p));
execFileSync(local ?? 'tsc', ['-p', join(here, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(join(here, 'src/generated'), join(dist, 'generated'), { recursive: true });
chmodSync(join(dist, 'bin.js'), 0o755);
