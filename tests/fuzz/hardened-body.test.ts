// The hardened JSON body parser, class by class, through HTTP on the real platform: bodies nested
// past the limit, reserved keys (`__proto__`, `constructor`, `prototype`), broken JSON and form
// bodies are refused in each service's own error model, never a 5xx, never repeating the input,
// and nothing is created. Each class was a defect found by fuzzing (issue 8).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_JSON_DEPTH } from '../../src/platform/json';
import type { ServiceName } from '../../src/platform/config';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { createActor, openSession, SCAN } from '../helpers/identity';

const MARK = 'zqXhardenedMARKq';
let p: TestPlatform;
let mediaRoot: string;
let scanToken: string;

beforeAll(async () => {
  mediaRoot = mkdtempSync(join(tmpdir(), 'keel-hardened-media-'));
  writeFileSync(join(mediaRoot, `${MARK}.txt`), 'not a medium\n');
  p = await startTestPlatform({
    services: ['workspaces', 'catalog', 'identity'],
    // No engine: nothing these tests send may reach one (a container would mean the parser let it through).
    env: { APP_MEDIA_ROOTS: mediaRoot, DOCKER_HOST: 'unix:///nonexistent/keel-hardened.sock' },
  });
  scanToken = (await openSession(p, (await createActor(p, [SCAN], 'hardened-scanner')).apiKey)).accessToken;
});

afterAll(async () => {
  await p?.close();
  rmSync(mediaRoot, { recursive: true, force: true });
});

/** POST raw text as JSON; `as`: workspace-API token subject, or an identity access token. */
function post(service: ServiceName, path: string, text: string, opts: { as?: string; bearer?: string; type?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': opts.type ?? 'application/json' };
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
  return p.api(service, path, { method: 'POST', as: opts.bearer ? null : (opts.as ?? 'admin'), headers, body: text });
}

/** Asserts the refusal: 400 in the service's model, the reason given, the input not repeated. */
async function expectRefused(res: Response, model: 'envelope' | 'problem', reason: string) {
  const text = await res.text();
  expect(res.status).toBe(400);
  expect(text).not.toContain(MARK);
  const body = JSON.parse(text);
  if (model === 'envelope') {
    expect(res.headers.get('content-type')).toStartWith('application/json');
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(body.error.details.reason).toBe(reason);
  } else {
    expect(res.headers.get('content-type')).toStartWith('application/problem+json');
    expect(body.code).toBe('parse');
    expect(body.status).toBe(400);
    expect(body.reason).toBe(reason);
  }
  return body;
}

const workspaceCount = async () => ((await (await p.api('workspaces', '/api/workspaces', { as: 'admin' })).json()) as { workspaces: unknown[] }).workspaces.length;
const actorCount = async () => ((await (await p.api('identity', '/actors', { as: 'admin' })).json()) as { actors: unknown[] }).actors.length;
const deepArray = (depth: number) => '['.repeat(depth) + JSON.stringify(MARK) + ']'.repeat(depth);

describe('bodies nested past the limit', () => {
  test('thousands of levels under a field answer 400 on identity, catalog and workspaces, not 500', async () => {
    const deep = deepArray(5000);
    await expectRefused(await post('identity', '/sessions', `{"apiKey":${deep}}`, { as: undefined }), 'problem', 'depth');
    await expectRefused(await post('identity', '/actors', `{"name":"a","policies":${deep}}`), 'problem', 'depth');
    await expectRefused(await post('catalog', '/scan', `{"path":${deep}}`, { bearer: scanToken }), 'problem', 'depth');
    await expectRefused(await post('workspaces', '/api/workspaces', `{"name":${deep}}`), 'envelope', 'depth');
    await expectRefused(await post('workspaces', '/api/workspaces/ws_x/exec', `{"command":"true","env":${deep}}`), 'envelope', 'depth');
  });

  test('the refusal names the limit', async () => {
    const body = await expectRefused(await post('identity', '/actors', deepArray(MAX_JSON_DEPTH + 1)), 'problem', 'depth');
    expect(body.limit).toBe(MAX_JSON_DEPTH);
  });

  test('nesting at the limit is read and left to the schema', async () => {
    const res = await post('identity', '/actors', `{"name":"a","policies":${deepArray(MAX_JSON_DEPTH - 1)}}`);
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe('validation');
  });

  test('brackets inside strings do not count as nesting', async () => {
    const before = await actorCount();
    const res = await post('identity', '/actors', JSON.stringify({ name: '['.repeat(80) + '{"\\'.repeat(10), policies: [] }));
    expect(res.status).toBe(201);
    expect(await actorCount()).toBe(before + 1);
  });
});

describe('reserved keys', () => {
  test('a workspace name given only under __proto__ creates nothing', async () => {
    const res = await post('workspaces', '/api/workspaces', `{"__proto__":{"name":"${MARK.toLowerCase()}","template":"minimal"}}`);
    await expectRefused(res, 'envelope', 'reserved-key');
    expect(await workspaceCount()).toBe(0);
  });

  test('a scan path given only under __proto__ is not read', async () => {
    await expectRefused(await post('catalog', '/scan', `{"__proto__":{"path":"${MARK}.txt"}}`, { bearer: scanToken }), 'problem', 'reserved-key');
    const works = (await (await fetch(p.url('catalog') + '/works')).json()) as { total: number };
    expect(works.total).toBe(0);
  });

  test('__proto__ written with JSON escapes is refused too', async () => {
    await expectRefused(await post('identity', '/actors', `{"\\u005f_proto__":{"name":"${MARK}","policies":[]}}`), 'problem', 'reserved-key');
  });

  test('constructor and prototype keys are refused at any depth', async () => {
    const before = await actorCount();
    await expectRefused(await post('identity', '/actors', `{"constructor":{"prototype":{"name":"${MARK}","policies":[]}}}`), 'problem', 'reserved-key');
    await expectRefused(await post('identity', '/actors', `{"name":"${MARK}","policies":[],"x":[{"prototype":1}]}`), 'problem', 'reserved-key');
    await expectRefused(await post('workspaces', '/api/workspaces/ws_x/exec', `{"command":"env","env":{"constructor":"${MARK}"}}`), 'envelope', 'reserved-key');
    expect(await actorCount()).toBe(before);
  });

  test('the same words as values, not keys, are ordinary data', async () => {
    const res = await post('identity', '/actors', JSON.stringify({ name: '__proto__ constructor prototype', policies: [] }));
    expect(res.status).toBe(201);
  });
});

describe('numbers no field can hold exactly', () => {
  test('an agent session whose context is a number past 2^53 answers 400, not an empty context', async () => {
    const res = await post('workspaces', '/api/agent/sessions', '{"workspaceId":"ws_x","model":"openai/m","context":9007199254740993}', { as: 'alice' });
    const body = await expectRefused(res, 'envelope', 'number');
    expect(JSON.stringify(body)).not.toContain('9007199254740993');
    expect(JSON.stringify(body)).not.toContain('9007199254740992');
    const sessions = await (await p.api('workspaces', '/api/agent/sessions', { as: 'alice' })).json();
    expect(sessions.sessions).toHaveLength(0);
  });

  test('1e309 and -1e309 (Infinity once parsed) are refused on the workspace API and on identity', async () => {
    await expectRefused(await post('workspaces', '/api/workspaces', `{"name":"${MARK}","template":"minimal","port":1e309}`), 'envelope', 'number');
    const before = await actorCount();
    const body = await expectRefused(await post('identity', '/actors', `{"name":"${MARK}","policies":[],"n":-1e309}`), 'problem', 'number');
    expect(JSON.stringify(body)).not.toContain('1e309');
    expect(await actorCount()).toBe(before);
    expect(await workspaceCount()).toBe(0);
  });

  test('a number nested in an array past 2^53 is refused on catalog too', async () => {
    await expectRefused(await post('catalog', '/scan', `{"path":"/${MARK}","x":[1,[-9007199254740993]]}`, { bearer: scanToken }), 'problem', 'number');
  });

  test('2^53 - 1, the largest exact integer, is read and left to the schema', async () => {
    const res = await post('workspaces', '/api/workspaces', `{"name":"big","template":"minimal","port":9007199254740991}`);
    expect(res.status).toBe(400);
    expect((await res.json()).error.details.reason).toBeUndefined();
  });
});

describe('bodies that are not JSON', () => {
  test('broken JSON answers 400 without quoting it', async () => {
    await expectRefused(await post('workspaces', '/api/workspaces', `{"name":"${MARK}",}`), 'envelope', 'syntax');
    await expectRefused(await post('identity', '/actors', `{"name":"${MARK}"`), 'problem', 'syntax');
  });

  test('form bodies are refused: no route takes a form', async () => {
    await expectRefused(await post('identity', '/actors', `name=${MARK}&policies=[]`, { type: 'application/x-www-form-urlencoded' }), 'problem', 'not-json');
    const form = `--b\r\ncontent-disposition: form-data; name="name"\r\n\r\n{"__proto__":{"x":"${MARK}"}}\r\n--b--\r\n`;
    await expectRefused(await post('workspaces', '/api/workspaces', form, { type: 'multipart/form-data; boundary=b' }), 'envelope', 'not-json');
    expect(await workspaceCount()).toBe(0);
  });

  test('a JSON media type with parameters, or a +json type, goes through the same parser', async () => {
    await expectRefused(await post('identity', '/actors', deepArray(100), { type: 'application/json; charset=utf-8' }), 'problem', 'depth');
    await expectRefused(await post('identity', '/actors', `{"__proto__":{}}`, { type: 'application/merge-patch+json' }), 'problem', 'reserved-key');
  });

  test('an empty body on a route that takes none is no body, not an error', async () => {
    const res = await post('workspaces', '/api/workspaces/ws_missing/start', '');
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe('WORKSPACE_NOT_FOUND');
  });
});
