// Property-based fuzzing of every route of every service, enumerated from each service's own
// /openapi.json (a new route is fuzzed without touching this file). For any body, path parameter,
// query string and token: no 5xx; a 4xx is in the service's error model; nothing received comes
// back in an error; a refused request creates nothing; the service still answers /health.
// `npm test` runs FUZZ_RUNS (40) cases per route with a fixed seed; docs/api-hardening.md has the long run.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { POLICIES } from '../../src/platform/auth/policies';
import type { ServiceName } from '../../src/platform/config';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { createActor, openSession } from '../helpers/identity';
import { bodyFor, FUZZ_RUNS, FUZZ_SEED, MARKER, pathParam, queryFor, type FuzzBody } from './arbitraries';
import { dereferencedDocument } from '../helpers/openapi';

const SERVICES: ServiceName[] = ['workspaces', 'catalog', 'identity', 'sources', 'workers', 'playback'];
/** One route each document must list, so a document that lost its paths cannot pass as "fuzzed everything". */
const KNOWN: Record<ServiceName, string> = { workspaces: 'POST /api/workspaces/{id}/exec', catalog: 'POST /scan', identity: 'PATCH /actors/{id}', sources: 'GET /health', workers: 'GET /health', playback: 'POST /sessions' };
const STYLE: Record<ServiceName, 'envelope' | 'problem'> = { workspaces: 'envelope', catalog: 'problem', identity: 'problem', sources: 'problem', workers: 'problem', playback: 'problem' };

let p: TestPlatform;
let mediaRoot: string;
const tokens: Record<string, string | undefined> = {};

beforeAll(async () => {
  mediaRoot = mkdtempSync(join(tmpdir(), 'keel-fuzz-media-'));
  writeFileSync(join(mediaRoot, 'notes.txt'), 'not a medium\n');
  p = await startTestPlatform({
    services: SERVICES,
    env: {
      // No engine answers here: a workspace body that passed validation could never start a container.
      // The generators never send one (see brokenBody), so this is a second fence, not the first.
      DOCKER_HOST: 'unix:///nonexistent/keel-fuzz-engine.sock',
      APP_MEDIA_ROOTS: mediaRoot,
      // Budgets out of the way, so cases reach validation and the routes' rules rather than 429.
      APP_RATE_LIMIT_ANONYMOUS: '1000000',
      APP_RATE_LIMIT_AUTHENTICATED: '1000000',
      APP_IDENTITY_SESSIONS_PER_S: '100000',
      APP_IDENTITY_SESSIONS_BURST: '100000',
    },
  });
  const { apiKey } = await createActor(p, [...POLICIES], 'fuzz-actor');
  tokens.identity = (await openSession(p, apiKey)).accessToken;
  tokens.admin = p.token('admin', { role: 'admin' });
  tokens.alice = p.token('alice');
  tokens.garbage = `${MARKER}.${MARKER}.${MARKER}`;
  tokens.none = undefined;
});

afterAll(async () => {
  await p?.close();
  rmSync(mediaRoot, { recursive: true, force: true });
});

interface Route {
  method: string;
  path: string;
  params: string[];
  query: string[];
  body: Record<string, any> | undefined;
}

async function routesOf(service: ServiceName): Promise<Route[]> {
  const doc = (await dereferencedDocument(p.url(service))) as { paths: Record<string, Record<string, any>> };
  const routes: Route[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const params = (op.parameters ?? []) as { in: string; name: string }[];
      routes.push({
        method: method.toUpperCase(),
        path,
        params: [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        query: params.filter((x) => x.in === 'query').map((x) => x.name),
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return routes;
}

/** What a refused request must leave as it was: workspaces, actors, works. */
async function snapshot() {
  const [ws, actors, works] = await Promise.all([
    p.api('workspaces', '/api/workspaces', { as: 'admin' }).then((r) => r.json() as Promise<{ workspaces: unknown[] }>),
    p.api('identity', '/actors', { as: 'admin' }).then((r) => r.json() as Promise<{ actors: unknown[] }>),
    fetch(p.url('catalog') + '/works?pageSize=1').then((r) => r.json() as Promise<{ total: number }>),
  ]);
  return { workspaces: ws.workspaces.length, actors: actors.actors.length, works: works.total };
}

function expectErrorModel(service: ServiceName, route: Route, res: Response, body: any) {
  if (route.path === '/mcp' && body.jsonrpc === '2.0') {
    // The MCP endpoint speaks JSON-RPC: a message it refuses gets JSON-RPC's error object.
    expect(res.headers.get('content-type')).toStartWith('application/json');
    expect(Number.isInteger(body.error.code)).toBe(true);
    expect(typeof body.error.message).toBe('string');
  } else if (STYLE[service] === 'envelope') {
    expect(res.headers.get('content-type')).toStartWith('application/json');
    expect(typeof body.error.code).toBe('string');
    expect(typeof body.error.message).toBe('string');
    expect(typeof body.error.details).toBe('object');
  } else {
    expect(res.headers.get('content-type')).toStartWith('application/problem+json');
    expect(body.type).toStartWith('https://keel.dev/problems/');
    expect(typeof body.title).toBe('string');
    expect(typeof body.code).toBe('string');
    expect(body.status).toBe(res.status);
  }
}

async function send(service: ServiceName, route: Route, values: { params: string[]; query: string; body: FuzzBody; token: string }) {
  let path = route.path;
  route.params.forEach((name, i) => (path = path.replace(`{${name}}`, values.params[i]!)));
  const headers: Record<string, string> = {};
  const token = tokens[values.token];
  if (token) headers.authorization = `Bearer ${token}`;
  const hasBody = route.method !== 'GET' && route.method !== 'HEAD' && values.body.text !== undefined;
  if (hasBody && values.body.contentType) headers['content-type'] = values.body.contentType;
  return fetch(p.url(service) + path + values.query, { method: route.method, headers, body: hasBody ? values.body.text : undefined });
}

describe('every route of every service, with arbitrary input', () => {
  for (const service of SERVICES) {
    test(
      `${service}: no 5xx, errors in its own model, nothing echoed or created, healthy after`,
      async () => {
        const routes = await routesOf(service);
        expect(routes.map((r) => `${r.method} ${r.path}`)).toContain(KNOWN[service]);
        for (const route of routes) {
          const input = fc.record({
            params: fc.array(pathParam, { minLength: route.params.length, maxLength: route.params.length }),
            query: queryFor(route.query),
            body: bodyFor(route.body),
            token: fc.constantFrom(...Object.keys(tokens)),
          });
          await fc.assert(
            fc.asyncProperty(input, async (values) => {
              const writes = route.method !== 'GET';
              const before = writes ? await snapshot() : undefined;
              const res = await send(service, route, values);
              // An open event stream (GET /api/events) does not end by itself: its status is the answer.
              if (res.status === 200 && res.headers.get('content-type')?.startsWith('text/event-stream')) return void (await res.body?.cancel());
              const text = await res.text();
              const where = `${route.method} ${route.path} answered ${res.status}`;
              expect(res.status, where).toBeLessThan(500);
              const sentBody = route.method !== 'GET' && values.body.text !== undefined;
              if (sentBody && values.body.mustRefuse) expect(res.status, `${where} to a body the parser must refuse`).toBeGreaterThanOrEqual(400);
              if (res.status < 400) return;
              expectErrorModel(service, route, res, JSON.parse(text));
              expect(text.includes(MARKER), `${where} and repeated the input`).toBe(false);
              for (const [name, value] of res.headers) expect(value.includes(MARKER), `${where} with the input in ${name}`).toBe(false);
              if (before) expect(await snapshot(), `${where} yet changed what exists`).toEqual(before);
            }),
            { numRuns: FUZZ_RUNS, seed: FUZZ_SEED, endOnFailure: true },
          );
        }
        const health = await fetch(p.url(service) + '/health');
        expect(health.status).toBe(200);
        expect(((await health.json()) as { status: string }).status).toBe('ok');
      },
      // Generous for a loaded 2-core machine (the default run takes about a second per service); grows with FUZZ_RUNS.
      60_000 + FUZZ_RUNS * 600,
    );
  }
});
