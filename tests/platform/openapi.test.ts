// Every service's /openapi.json is a valid OpenAPI 3.0 document (swagger-parser), so clients and
// generators can read it, and it describes the JSON bodies the hardened parser takes and refuses.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { ServiceName } from '../../src/platform/config';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

const SERVICES: ServiceName[] = ['workspaces', 'catalog', 'identity', 'sources', 'workers'];
type Operation = { requestBody?: { content?: Record<string, unknown> }; responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

let p: TestPlatform;
const docs = {} as Record<ServiceName, Doc>;

beforeAll(async () => {
  p = await startTestPlatform({ services: SERVICES, env: { DOCKER_HOST: 'unix:///nonexistent/keel-openapi.sock' } });
  for (const s of SERVICES) {
    const res = await fetch(p.url(s) + '/openapi.json');
    expect(res.status).toBe(200);
    docs[s] = (await res.json()) as Doc;
  }
});
afterAll(() => p?.close());

const operations = (doc: Doc) => Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op })));

describe('each service publishes a valid OpenAPI 3.0 document', () => {
  for (const service of SERVICES) {
    test(`${service}: /openapi.json validates with swagger-parser`, async () => {
      expect(docs[service].openapi).toStartWith('3.0.');
      // validate() dereferences in place: give it a copy.
      const api = await SwaggerParser.validate(structuredClone(docs[service]) as never);
      expect(Object.keys(api.paths ?? {})).toContain('/health');
    });
  }

  test('the /health schema is an OpenAPI 3.0 schema object (no JSON Schema `const`)', () => {
    for (const service of SERVICES) {
      const schema = docs[service].paths['/health']!.get!.responses['200']!.content!['application/json']!.schema as any;
      expect(schema.properties.status).toEqual({ type: 'string', enum: ['ok'] });
    }
  });

  test('the workspace error envelope describes `details` as an object of any values', () => {
    const envelope = docs.workspaces.paths['/api/workspaces']!.post!.responses['409']!.content!['application/json']!.schema as any;
    const details = envelope.properties.error.properties.details;
    expect(details.type).toBe('object');
    expect(details.patternProperties).toBeUndefined();
    expect(details.additionalProperties).toBeDefined();
  });

  test('every body is application/json, and every operation that takes one documents the 400 the parser answers', () => {
    let bodies = 0;
    for (const service of SERVICES) {
      for (const { where, op } of operations(docs[service])) {
        if (!op.requestBody) continue;
        bodies++;
        expect(Object.keys(op.requestBody.content ?? {}), where).toEqual(['application/json']);
        expect(op.responses['400'], where).toBeDefined();
      }
    }
    expect(bodies).toBeGreaterThanOrEqual(6);
  });
});
