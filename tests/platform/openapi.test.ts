// Every service's /openapi.json is a valid OpenAPI 3.0 document (swagger-parser), so clients and
// generators can read it, and it describes the JSON bodies the hardened parser takes and refuses.
// What generators need besides: stable operationIds, named components behind $ref, each operation's
// error codes as enums (from the service's error table), and an example on every JSON body.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { ServiceName } from '../../src/platform/config';
import type { ErrorTable } from '../../src/platform/errors';
import { catalogErrorTable } from '../../src/services/catalog/catalog.errors';
import { identityErrorTable } from '../../src/services/identity/identity.errors';
import { playbackErrorTable } from '../../src/services/playback/playback.errors';
import { sourcesErrorTable } from '../../src/services/sources/sources.errors';
import { workersErrorTable } from '../../src/services/workers/workers.errors';
import { workspaceErrorTable } from '../../src/services/workspaces/workspaces.errors';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

const SERVICES: ServiceName[] = ['workspaces', 'catalog', 'identity', 'sources', 'workers', 'playback'];
type Media = { schema?: any; example?: unknown };
type Operation = { operationId?: string; requestBody?: { content?: Record<string, Media> }; responses: Record<string, { content?: Record<string, Media> }> };
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, any> } };

let p: TestPlatform;
const docs = {} as Record<ServiceName, Doc>;
/** Each service's own table: a code documented on a service must mean that status in that service. */
const TABLES: Record<ServiceName, ErrorTable> = {
  workspaces: workspaceErrorTable,
  catalog: catalogErrorTable,
  identity: identityErrorTable,
  sources: sourcesErrorTable,
  workers: workersErrorTable,
  playback: playbackErrorTable,
};

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
      const schema = docs[service].components!.schemas!.Health as any;
      expect(schema.properties.status).toEqual({ type: 'string', enum: ['ok'] });
    }
  });

  test('the workspace error envelope describes `details` as an object of any values', () => {
    const response = docs.workspaces.paths['/api/workspaces']!.post!.responses['409']!.content!['application/json']!.schema as any;
    expect(response.allOf[0]).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
    const envelope = docs.workspaces.components!.schemas!.ErrorEnvelope as any;
    const details = envelope.properties.error.properties.details;
    expect(details.type).toBe('object');
    expect(details.patternProperties).toBeUndefined();
    expect(details.additionalProperties).toBeDefined();
  });

  test('every body is application/json but the streamed raw ones, and every operation that takes one documents the 400 the parser answers', () => {
    let bodies = 0;
    // Raw bodies the route streams itself (a file's bytes, a process's stdin).
    const raw = ['writeWorkspaceFile', 'writeWorkspaceProcessStdin'];
    for (const service of SERVICES) {
      for (const { where, op } of operations(docs[service])) {
        if (!op.requestBody) continue;
        bodies++;
        expect(Object.keys(op.requestBody.content ?? {}), where).toEqual([raw.includes(op.operationId ?? '') ? 'application/octet-stream' : 'application/json']);
        expect(op.responses['400'], where).toBeDefined();
      }
    }
    expect(bodies).toBeGreaterThanOrEqual(6);
  });
});

/**
 * The operationIds SDKs name their methods after. Changing one breaks every generated client: this
 * list changes only on purpose (a new route adds its id here).
 */
const OPERATION_IDS: Record<ServiceName, string[]> = {
  workspaces: [
    'getHealth', 'getVersion', 'openWorkspaceTerminal', 'ticketWorkspaceTerminal', 'attachWorkspaceTerminal', 'listWorkspaces', 'createWorkspace', 'getWorkspace', 'deleteWorkspace', 'startWorkspace', 'stopWorkspace',
    'restartWorkspace', 'pauseWorkspace', 'resumeWorkspace', 'createSnapshot', 'forkWorkspace', 'listSnapshots', 'getSnapshot', 'deleteSnapshot', 'getQuotas', 'getWorkspaceLogs', 'getStreamStats', 'execCommand', 'createAgentSession', 'listAgentSessions',
    'getAgentSession', 'deleteAgentSession', 'sendAgentMessage', 'streamAgentEvents', 'cancelAgentTurn', 'listAgentApprovals', 'decideAgentApproval', 'getUsage', 'mcp', 'createWebhook', 'listWebhooks',
    'getWebhook', 'updateWebhook', 'deleteWebhook', 'pingWebhook', 'listWebhookDeliveries', 'getWebhookDelivery', 'redeliverWebhookDelivery',
    'streamEvents', 'listTemplates', 'createTemplate', 'createTemplateFromSnapshot', 'getTemplate', 'rebuildTemplate', 'deleteTemplate', 'readTemplateBuildLog', 'listVolumes', 'deleteVolume',
    'readWorkspaceFile', 'writeWorkspaceFile', 'deleteWorkspaceFile', 'moveWorkspaceFile',
    'startWorkspaceProcess', 'listWorkspaceProcesses', 'getWorkspaceProcess', 'readWorkspaceProcessOutput', 'writeWorkspaceProcessStdin', 'signalWorkspaceProcess',
    'createWorkspacePreview', 'listWorkspacePreviews', 'revokeWorkspacePreview',
  ],
  catalog: ['getHealth', 'getVersion', 'listKinds', 'listWorks', 'getWork', 'listWorkAssets', 'getWorkImage', 'listWorkRelations', 'scanFile', 'startLibraryScan', 'getLibraryScan'],
  identity: [
    'getHealth', 'getVersion', 'getJwks', 'rotateSigningKey', 'createActor', 'listActors', 'getActor', 'updateActor', 'rotateActorKey',
    'createSession', 'refreshSession', 'revokeSession',
  ],
  sources: ['getHealth', 'getVersion'],
  workers: ['getHealth', 'getVersion'],
  playback: [
    'getHealth', 'getVersion', 'createPlaybackSession', 'endPlaybackSession', 'getMasterPlaylist', 'getMediaPlaylist', 'getThumbnailsVtt', 'getThumbnailsSprite', 'getPlaybackFile', 'putPlaybackProgress', 'listPlaybackProgress',
  ],
};

const media = (style: 'envelope' | 'problem') => (style === 'envelope' ? 'application/json' : 'application/problem+json');
const styleOf = (service: ServiceName) => (service === 'workspaces' ? 'envelope' : 'problem');

/** The `code` enum of an error response's schema (inline envelope, or Problem with its code narrowed). */
function codesOf(schema: any): string[] | undefined {
  const narrowed = (schema?.allOf ?? []).find((s: any) => s.properties?.code?.enum ?? s.properties?.error?.properties?.code?.enum);
  return narrowed?.properties.code?.enum ?? narrowed?.properties.error.properties.code.enum;
}

describe('a document generators love', () => {
  test('every operation of every service has its explicit, stable operationId', () => {
    for (const service of SERVICES) {
      const ids = operations(docs[service]).map(({ op }) => op.operationId);
      expect(ids.sort(), service).toEqual([...OPERATION_IDS[service]].sort());
      for (const { where, op } of operations(docs[service])) expect((op as any)['x-keel-implicit-operation-id'], `${service} ${where}`).toBeUndefined();
    }
  });

  test("every error response refers to its service's named error component, narrowed to the operation's codes", () => {
    for (const service of SERVICES) {
      const name = styleOf(service) === 'envelope' ? 'ErrorEnvelope' : 'Problem';
      expect(docs[service].components!.schemas![name], service).toBeDefined();
      for (const { where, op } of operations(docs[service])) {
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          if (Number(status) < 400) continue;
          const schema = (response as any).content?.[media(styleOf(service))]?.schema;
          expect(schema?.allOf?.[0], `${service} ${where} ${status}`).toEqual({ $ref: `#/components/schemas/${name}` });
          expect(codesOf(schema)?.length, `${service} ${where} ${status}`).toBeGreaterThan(0);
        }
      }
    }
  });

  test('the probes, the catalog lists, the library scan answer, the JWKS and the actor answers are named components', () => {
    const answer = (service: ServiceName, path: string, method: string, status: string) =>
      ((docs[service].paths[path] as any)[method].responses[status].content['application/json'].schema as any).$ref;
    for (const service of SERVICES) {
      expect(answer(service, '/health', 'get', '200'), service).toBe('#/components/schemas/Health');
      expect(answer(service, '/version', 'get', '200'), service).toBe('#/components/schemas/Version');
    }
    expect(answer('catalog', '/kinds', 'get', '200')).toBe('#/components/schemas/KindList');
    expect(answer('catalog', '/works', 'get', '200')).toBe('#/components/schemas/WorkPage');
    expect(answer('catalog', '/works/{id}', 'get', '200')).toBe('#/components/schemas/WorkAnswer');
    expect(answer('catalog', '/works/{id}/assets', 'get', '200')).toBe('#/components/schemas/AssetList');
    expect(answer('catalog', '/works/{id}/relations', 'get', '200')).toBe('#/components/schemas/RelationList');
    expect(answer('catalog', '/library/scans', 'post', '202')).toBe('#/components/schemas/LibraryScanAccepted');
    expect(answer('identity', '/.well-known/jwks.json', 'get', '200')).toBe('#/components/schemas/Jwks');
    expect(answer('identity', '/actors', 'get', '200')).toBe('#/components/schemas/ActorList');
    expect(answer('identity', '/actors/{id}', 'get', '200')).toBe('#/components/schemas/ActorAnswer');
  });

  test('every error response lists its codes as an enum, each a code the table gives that status', () => {
    let responses = 0;
    for (const service of SERVICES) {
      for (const { where, op } of operations(docs[service])) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          responses++;
          const codes = codesOf(response.content?.[media(styleOf(service))]?.schema);
          expect(codes, `${service} ${where} ${status}`).toBeArray();
          for (const code of codes!) expect(TABLES[service][code]?.status, `${service} ${where} ${status} ${code}`).toBe(Number(status));
        }
      }
    }
    expect(responses).toBeGreaterThan(150);
  });

  test("getWorkspace's 404 answers exactly WORKSPACE_NOT_FOUND, and a real 404 carries that code", async () => {
    const op = docs.workspaces.paths['/api/workspaces/{id}']!.get!;
    expect(codesOf(op.responses['404']!.content!['application/json']!.schema)).toEqual(['WORKSPACE_NOT_FOUND']);
    const res = await p.api('workspaces', '/api/workspaces/ws_nope', { as: 'alice' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe('WORKSPACE_NOT_FOUND');
  });

  test('a guarded catalog route documents the guard refusals and its domain codes under their statuses', () => {
    const op = docs.catalog.paths['/scan']!.post!;
    const at = (status: string) => codesOf(op.responses[status]!.content!['application/problem+json']!.schema);
    expect(at('401')).toEqual(['unauthenticated', 'reauth-required']);
    expect(at('404')).toEqual(expect.arrayContaining(['CATALOG_PATH_NOT_FOUND', 'CATALOG_WORK_NOT_FOUND']));
    expect(at('504')).toEqual(['MEDIA_PROBE_TIMEOUT', 'BUS_TIMEOUT']);
  });

  test('shapes are named components referred to with $ref, and every reference resolves', () => {
    const create = docs.workspaces.paths['/api/workspaces']!.post!;
    expect(create.requestBody!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/CreateWorkspaceBody' });
    expect(create.responses['201']!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/CreatedWorkspace' });
    expect(Object.keys(docs.workspaces.components!.schemas!)).toEqual(
      expect.arrayContaining(['Workspace', 'ExecResult', 'Session', 'Webhook', 'ErrorEnvelope', 'QuotaView']),
    );
    expect(Object.keys(docs.catalog.components!.schemas!)).toEqual(expect.arrayContaining(['Work', 'Problem', 'ScanBody']));
    for (const service of SERVICES) {
      const text = JSON.stringify(docs[service]);
      for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) expect(docs[service].components?.schemas?.[name!], `${service} ${name}`).toBeDefined();
    }
  });

  test('every JSON request and response body has an example; error examples carry a documented code', () => {
    for (const service of SERVICES) {
      for (const { where, op } of operations(docs[service])) {
        const bodies = [op.requestBody, ...Object.values(op.responses)].flatMap((b) => Object.entries(b?.content ?? {}));
        for (const [type, m] of bodies) {
          if (!type.includes('json')) continue;
          expect(m.example, `${service} ${where} ${type}`).toBeDefined();
        }
        for (const [status, response] of Object.entries(op.responses)) {
          const m = response.content?.[media(styleOf(service))];
          if (Number(status) < 400 || !m) continue;
          const code = styleOf(service) === 'envelope' ? (m.example as any).error.code : (m.example as any).code;
          expect(codesOf(m.schema)).toContain(code);
        }
      }
    }
  });

  test('each event stream names the schema of its events, one member per event name', () => {
    const streams: [string, string, string, string[]][] = [
      ['/api/agent/sessions/{id}/events', 'get', 'AgentEvent', ['delta', 'tool', 'approval', 'done', 'error']],
      ['/api/agent/sessions/{id}/messages', 'post', 'AgentEvent', ['delta', 'tool', 'approval', 'done', 'error']],
      ['/api/workspaces/{id}/exec', 'post', 'ExecEvent', ['stdout', 'stderr', 'exit', 'error']],
      ['/api/workspaces/{id}/logs', 'get', 'LogEvent', ['message', 'end', 'dropped', 'error']],
      ['/api/events', 'get', 'WorkspaceStreamEvent', ['workspace', 'ready', 'reset', 'end', 'dropped']],
    ];
    const schemas = docs.workspaces.components!.schemas!;
    for (const [path, method, name, events] of streams) {
      const media = docs.workspaces.paths[path]![method]!.responses['200']!.content!['text/event-stream'] as any;
      expect(media['x-event-schema'], path).toEqual({ $ref: `#/components/schemas/${name}` });
      expect(schemas[name].anyOf.map((m: any) => m.properties.event.enum[0]), name).toEqual(events);
    }
    const done = schemas.AgentEvent.anyOf.find((m: any) => m.properties.event.enum[0] === 'done');
    expect(done.properties.data).toEqual({ $ref: '#/components/schemas/AssistantReply' });
    const line = schemas.LogEvent.anyOf.find((m: any) => m.properties.event.enum[0] === 'message');
    expect(line.properties.data).toEqual({ $ref: '#/components/schemas/LogEntry' });
  });
});
