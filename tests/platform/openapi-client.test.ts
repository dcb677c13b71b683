// A typed client generated from the live workspace document works: openapi-typescript turns
// /openapi.json into `paths`, tsc (strict) compiles a program that uses openapi-fetch with them,
// and bun runs it against a real platform and Docker engine (create `minimal`, wait, exec, delete).
// openapi-typescript builds its output with the TypeScript 5 compiler API, which TypeScript 7 (the
// project's tsc) no longer ships: it is bundled here against the `typescript5` dev dependency.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean } from '../helpers/workspaces';

const REPO = resolve(import.meta.dir, '../..');
let p: TestPlatform;
let dir: string;

beforeAll(async () => {
  requireTestEnv('DOCKER_HOST');
  // A port range of its own: other test files (and other runs on a shared engine) hold ports of the default one.
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24650-24699' } });
  dir = mkdtempSync(join(tmpdir(), 'keel-openapi-client-'));
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
});
afterAll(async () => {
  await closeAndClean(p);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** openapi-typescript, bundled so that its `import "typescript"` is TypeScript 5. */
async function loadOpenapiTypescript() {
  const ts5 = require.resolve('typescript5');
  const built = await Bun.build({
    entrypoints: [Bun.fileURLToPath(import.meta.resolve('openapi-typescript'))],
    target: 'bun',
    outdir: join(dir, 'openapi-typescript'),
    plugins: [{ name: 'typescript5', setup: (b) => void b.onResolve({ filter: /^typescript$/ }, () => ({ path: ts5 })) }],
  });
  if (!built.success) throw new AggregateError(built.logs, 'bundling openapi-typescript failed');
  return (await import(built.outputs[0]!.path)) as typeof import('openapi-typescript');
}

/** Runs a command in the client's directory. Async: the platform answering it lives in this process. */
async function run(cmd: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(cmd, { cwd: dir, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

test(
  'a client generated from /openapi.json compiles strictly and creates, runs, execs in and deletes a workspace',
  async () => {
    const doc = await (await fetch(p.url('workspaces') + '/openapi.json')).json();
    const { default: openapiTS, astToString } = await loadOpenapiTypescript();
    writeFileSync(join(dir, 'api.ts'), astToString(await openapiTS(doc)));
    copyFileSync(join(import.meta.dir, 'openapi-client/program.ts.txt'), join(dir, 'program.ts'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ESNext', module: 'ESNext', moduleResolution: 'bundler', lib: ['ESNext'], types: ['bun'],
          strict: true, noUncheckedIndexedAccess: true, noEmit: true, skipLibCheck: true,
        },
        files: ['program.ts', 'api.ts'],
      }),
    );

    const tsc = await run([join(REPO, 'node_modules/.bin/tsc'), '-p', 'tsconfig.json']);
    expect(tsc.out + tsc.err).toBe('');
    expect(tsc.code).toBe(0);

    const name = `oa-client-${Date.now().toString(36)}`;
    const program = await run([process.execPath, 'program.ts'], { KEEL_URL: p.url('workspaces'), KEEL_TOKEN: p.token('alice'), KEEL_WORKSPACE_NAME: name });
    expect(program.err).toBe('');
    expect(program.code).toBe(0);
    const result = JSON.parse(program.out.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({ exitCode: 0, stdout: 'hi\n', timedOut: false, deleted: true });

    const after = await p.api('workspaces', `/api/workspaces/${result.id}`);
    expect(after.status).toBe(404);
  },
  180_000,
);
