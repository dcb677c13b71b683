// Exec bodies fuzzed against a real running `minimal` workspace: bodies of the wrong shape, with
// junk keys, nested too deep or hiding fields under reserved keys never answer 5xx, errors are
// envelopes that do not repeat the input, and the workspace still runs commands afterwards.
// (A fuzzer once found a 500 here for a bad body with junk keys; routes.test.ts only reaches exec
// with unknown workspace ids.)
import { afterAll, beforeAll, expect, test } from 'bun:test';
import fc from 'fast-check';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, createRunning } from '../helpers/workspaces';
import { anyJson, bodyFor, FUZZ_RUNS, FUZZ_SEED, MARKER } from './arbitraries';
import { dereferencedDocument } from '../helpers/openapi';

let p: TestPlatform;
let id: string;
let schema: Record<string, any>;

beforeAll(async () => {
  requireTestEnv('DOCKER_HOST');
  // A port range of its own: other test files (and other runs on a shared engine) hold ports of the default one.
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24600-24649' } });
  id = (await createRunning(p, `fuzz-exec-${Date.now().toString(36)}`)).id;
  const doc = await dereferencedDocument(p.url('workspaces'));
  schema = doc.paths['/api/workspaces/{id}/exec'].post.requestBody.content['application/json'].schema;
}, 120_000);
afterAll(() => closeAndClean(p));

/** A command that does nothing, with junk beside it: unknown keys, reserved keys, odd values. */
const junkBeside = fc
  .dictionary(fc.oneof(fc.string({ maxLength: 8 }).map((k) => `${k}${MARKER}`), fc.constantFrom('__proto__', 'constructor', 'prototype', 'env', 'workdir', 'timeout', 'stream')), anyJson, { minKeys: 1, maxKeys: 4 })
  .map((junk) => ({ text: JSON.stringify({ command: 'true', ...junk }), contentType: 'application/json', mustRefuse: false }));

test(
  'no exec body breaks the service or the workspace',
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(bodyFor(schema), junkBeside), async (body) => {
        const headers: Record<string, string> = body.contentType ? { 'content-type': body.contentType } : {};
        const res = await p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', as: 'alice', headers, body: body.text });
        const text = await res.text();
        expect(res.status, `exec answered ${res.status}`).toBeLessThan(500);
        if (body.mustRefuse) expect(res.status).toBe(400);
        if (res.status >= 400) {
          expect(JSON.parse(text).error.code).toBeString();
          expect(text).not.toContain(MARKER);
        }
      }),
      { numRuns: FUZZ_RUNS * 3, seed: FUZZ_SEED, endOnFailure: true },
    );
    const ok = await p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', as: 'alice', json: { command: 'echo ok' } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { stdout: string }).stdout).toBe('ok\n');
  },
  60_000 + FUZZ_RUNS * 3_000,
);
