// A typed client generated from the live workspace document works: openapi-typescript turns
// /openapi.json into `paths`, tsc (strict) compiles a program that uses openapi-fetch with them,
// and bun runs it against a real platform and Docker engine (create `minimal`, wait, exec, delete).
// openapi-typescript builds its output with the TypeScript 5 compiler API, which TypeScript 7 (the
// project's tsc) no longer ships: it is bundled here against the `typescript5` dev dependency.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
    writeFileSync(join(dir, 'api.ts'), astToString(await openapiTS(doc, { defaultNonNullable: false })));
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

/** Programs against the committed client package, one per service: each must compile strictly. */
const PROGRAMS: Record<string, string> = {
  workspaces: `
    import { createKeelClient, readEvents, type ExecEvent, type WorkspaceData as Workspace } from '@keel/sdk';
    const keel = createKeelClient({ token: 't' });
    const got = await keel.workspaces.GET('/api/workspaces/{id}', { params: { path: { id: 'ws_1' } } });
    if (got.error) {
      const code: 'WORKSPACE_NOT_FOUND' | 'INVALID_REQUEST' | 'UNAUTHORIZED' | 'RATE_LIMITED' = got.error.error.code;
      console.log(code);
    } else {
      const ws: Workspace = got.data;
      const status: 'creating' | 'starting' | 'running' | 'paused' | 'stopping' | 'stopped' | 'restarting' | 'failed' = ws.status;
      console.log(status);
    }
    const run = await keel.workspaces.POST('/api/workspaces/{id}/exec', { params: { path: { id: 'ws_1' } }, body: { command: 'ls', stream: true }, parseAs: 'stream' });
    for await (const e of readEvents<ExecEvent>(run.response)) {
      if (e.event === 'exit') { const exitCode: number = e.data.exitCode; console.log(exitCode); }
      else if (e.event === 'stdout' || e.event === 'stderr') { const text: string = e.data.data; console.log(text); }
    }
  `,
  catalog: `
    import { createKeelClient, type Work } from '@keel/sdk';
    const keel = createKeelClient({ urls: { catalog: 'http://127.0.0.1:3101' }, token: async () => 'access-token' });
    const page = await keel.catalog.GET('/works', { params: { query: { page: 1, pageSize: 10 } } });
    if (page.data) { const works: Work[] = page.data.works; console.log(works.length, page.data.total); }
    const scan = await keel.catalog.POST('/scan', { body: { path: 'movies/a.mkv' } });
    if (scan.error) { const code: string = scan.error.code; const status: number = scan.error.status; console.log(code, status); }
  `,
  identity: `
    import { createKeelClient, type TokenPair } from '@keel/sdk';
    const keel = createKeelClient();
    const opened = await keel.identity.POST('/sessions', { body: { apiKey: 'key' } });
    if (opened.data) { const pair: TokenPair = opened.data; console.log(pair.accessToken); }
    else if (opened.error) { const code: 'unauthenticated' | 'rate-limited' | 'validation' | 'parse' | 'payload-too-large' = opened.error.code; console.log(code); }
  `,
  sources: `
    import { createKeelClient } from '@keel/sdk';
    const health = await createKeelClient().sources.GET('/health');
    if (health.data) { const ok: 'ok' = health.data.status; console.log(ok); }
  `,
  workers: `
    import { createKeelClient } from '@keel/sdk';
    const version = await createKeelClient().workers.GET('/version');
    if (version.data) { const component: string = version.data.component; console.log(component); }
  `,
};

/** The first TypeScript block of the package's README: what people copy must compile. */
const README_EXAMPLE = () => {
  const text = readFileSync(join(REPO, 'clients/typescript/README.md'), 'utf8');
  return text.match(/```ts\n([\s\S]*?)```/)![1]!;
};

test(
  'the committed client package compiles strictly in a program for each service and in its README example',
  async () => {
    const programs = { ...PROGRAMS, readme: README_EXAMPLE() };
    for (const [name, source] of Object.entries(programs)) writeFileSync(join(dir, `client-${name}.ts`), `export {};\n${source}`);
    writeFileSync(
      join(dir, 'tsconfig.client.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ESNext', module: 'ESNext', moduleResolution: 'bundler', lib: ['ESNext', 'DOM'], types: ['bun'],
          strict: true, noUncheckedIndexedAccess: true, noEmit: true, skipLibCheck: true,
          paths: { '@keel/sdk': [join(REPO, 'clients/typescript/src/index.ts')] },
        },
        files: Object.keys(programs).map((n) => `client-${n}.ts`),
      }),
    );
    const tsc = await run([join(REPO, 'node_modules/.bin/tsc'), '-p', 'tsconfig.client.json']);
    expect(tsc.out + tsc.err).toBe('');
    expect(tsc.code).toBe(0);
  },
  120_000,
);

test('a program that misuses the client does not compile: the types are not any', async () => {
  writeFileSync(join(dir, 'client-wrong.ts'), `export {};\n${PROGRAMS.workspaces!.replace("const ws: Workspace = got.data;", "const ws: number = got.data;")}`);
  writeFileSync(
    join(dir, 'tsconfig.wrong.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ESNext', module: 'ESNext', moduleResolution: 'bundler', lib: ['ESNext', 'DOM'], types: ['bun'], strict: true, noEmit: true, skipLibCheck: true,
        paths: { '@keel/sdk': [join(REPO, 'clients/typescript/src/index.ts')] },
      },
      files: ['client-wrong.ts'],
    }),
  );
  const tsc = await run([join(REPO, 'node_modules/.bin/tsc'), '-p', 'tsconfig.wrong.json']);
  expect(tsc.out).toContain("is not assignable to type 'number'");
  expect(tsc.code).not.toBe(0);
}, 120_000);
