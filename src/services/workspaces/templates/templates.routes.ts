// HTTP wiring of the templates people bring: create (202, a build starts), read, rebuild, delete, and a
// build's log (JSON, or followed as SSE). The rules live in templates.service.ts.
import { Elysia } from 'elysia';
import { BodyTooLarge, boundedText } from '../../../platform/http/errors';
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { WorkspaceErrors, workspaceOperation as op } from '../workspaces.errors';
import { Value } from '@sinclair/typebox/value';
import { JsonRefusal, parseJsonBody } from '../../../platform/json';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Template } from '../images/templates';
import { BuildAccepted, BuildLog, BuildLogQuery, BuildLogStream, BuildParams, CreateTemplateBody, SnapshotTemplateBody, TemplateDeleted, TemplateParams, TemplateView, type CreateTemplateInput } from './templates.model';
import type { CustomTemplates } from './templates.service';

const CREATE_EXAMPLE = {
  name: 'python-tools',
  dockerfile: 'FROM keel/minimal\nUSER root\nCOPY tools/ /opt/tools/\nRUN chmod +x /opt/tools/*\nUSER 1000:1000\n',
  files: { 'tools/hello': '#!/bin/sh\necho hello\n' },
  readyCommand: 'test -x /opt/tools/hello',
};

/**
 * POST /api/templates carries a build context of up to APP_TEMPLATE_CONTEXT_BYTES: past the platform's
 * JSON body limit, so this route reads and bounds its body itself (platform/http/errors.ts StreamedBodies).
 */
export const streamedTemplateBody = (request: Request) => request.method === 'POST' && new URL(request.url).pathname === '/api/templates';

/** The body, bounded (the context's limit as base64, plus room for the rest), parsed by the hardened parser and checked. */
async function readCreateBody(request: Request, contextBytes: number): Promise<CreateTemplateInput> {
  let text: string;
  try {
    text = await boundedText(request, Math.ceil((contextBytes * 4) / 3) + 2 * 1024 * 1024);
  } catch (e) {
    if (e instanceof BodyTooLarge) throw tooLarge(contextBytes);
    throw e;
  }
  let value: unknown;
  try {
    value = parseJsonBody(text);
  } catch (e) {
    throw WorkspaceErrors.INVALID_REQUEST(e instanceof JsonRefusal ? e.message : 'the request body is not valid JSON');
  }
  if (!Value.Check(CreateTemplateBody, value)) {
    // The schema's words, never the value received.
    const first = [...Value.Errors(CreateTemplateBody, value)][0];
    throw WorkspaceErrors.INVALID_REQUEST(`invalid body: ${first?.path || '/'} ${first?.message ?? ''}`.trim(), { errors: [{ in: 'body', property: first?.path || '/', detail: first?.message }] });
  }
  return value;
}

const tooLarge = (contextBytes: number) => WorkspaceErrors.PAYLOAD_TOO_LARGE(`a template's body is limited by its build context, at most APP_TEMPLATE_CONTEXT_BYTES (${contextBytes} bytes)`, { limit: contextBytes });

export function customTemplatesRoutes(deps: {
  auth: WorkspaceAuthPlugin;
  templates: CustomTemplates;
  sse: Sse;
  contextBytes: number;
  /** The caller's snapshot (else 404 SNAPSHOT_NOT_FOUND): its image and its workspace's template. */
  snapshotSource: (actor: Actor, id: string) => Promise<{ image: string; template: Template | undefined }>;
}) {
  const { templates } = deps;
  return new Elysia({ name: 'workspaces.custom-templates', detail: { tags: ['templates'] } })
    .use(deps.auth)
    .post('/api/templates', async ({ actor, request, set }) => {
      const body = await readCreateBody(request, deps.contextBytes);
      set.status = 202;
      return templates.create(actor, body);
    }, {
      response: { 202: BuildAccepted },
      detail: { ...op('createTemplate', ['FORBIDDEN', 'TEMPLATE_EXISTS', 'QUOTA_EXCEEDED', 'PAYLOAD_TOO_LARGE']),
        // Read by the route itself (a context past the platform's JSON limit): the schema is written here.
        requestBody: { required: true, content: { 'application/json': { schema: CreateTemplateBody as unknown as Record<string, unknown>, example: CREATE_EXAMPLE } } },
        summary: 'A template from a Dockerfile and its build context; its build starts (202)',
        description:
          'The build runs on the engine with no network for its steps and no privileged step, within APP_TEMPLATE_BUILD_TIMEOUT (30 min). ' +
          'A Dockerfile with `RUN --mount`, `--network`, `--security` or `ADD <url>` is 400 naming its line; a `files` path that is absolute or leaves ' +
          'the context 400; a context past APP_TEMPLATE_CONTEXT_BYTES 400. Past APP_QUOTA_TEMPLATES (20 per actor): 429. `public` is for admins (403).',
      },
    })
    .post('/api/snapshots/:id/template', async ({ actor, params, body, set }) => {
      const source = await deps.snapshotSource(actor, params.id);
      set.status = 202;
      return templates.fromSnapshot(actor, body.name, source);
    }, {
      params: TemplateParams,
      body: SnapshotTemplateBody,
      response: { 202: BuildAccepted },
      detail: { ...op('createTemplateFromSnapshot', ['SNAPSHOT_NOT_FOUND', 'TEMPLATE_EXISTS', 'QUOTA_EXCEEDED']),
        tags: ['templates'],
        summary: 'A template of one of your snapshots (its file system; answered as POST /api/templates)',
        description: "The snapshot's container file system becomes the template's image, run as the workspace it was taken of ran. Its volume (/workspace) is not part of it. Another actor's snapshot is 404 SNAPSHOT_NOT_FOUND.",
      },
    })
    .get('/api/templates/:id', ({ actor, params }) => templates.get(actor, params.id), {
      params: TemplateParams,
      response: { 200: TemplateView },
      detail: { ...op('getTemplate', ['TEMPLATE_NOT_FOUND']), summary: 'A template you may use: its status (ready, or failed with the failing step as reason) and version' },
    })
    .post('/api/templates/:id/builds', async ({ actor, params, set }) => {
      set.status = 202;
      return templates.rebuild(actor, params.id);
    }, {
      params: TemplateParams,
      response: { 202: BuildAccepted },
      detail: { ...op('rebuildTemplate', ['TEMPLATE_NOT_FOUND', 'TEMPLATE_BUILDING']), summary: 'Build the template again as a new version; running workspaces keep theirs' },
    })
    .delete('/api/templates/:id', ({ actor, params }) => templates.remove(actor, params.id), {
      params: TemplateParams,
      response: { 200: TemplateDeleted },
      detail: { ...op('deleteTemplate', ['TEMPLATE_NOT_FOUND']), summary: 'Delete your template; workspaces made from it keep working' },
    })
    .get('/api/templates/:id/builds/:buildId/logs', async ({ actor, params, query, request }) => {
      if (!query.follow) {
        const lines = [];
        let done: { status: string; reason?: string } = { status: 'building' };
        for await (const e of await templates.buildLog(actor, params.id, params.buildId, request.signal, false)) {
          if (e.line) lines.push(e.line);
          if (e.done) done = e.done;
        }
        return { status: done.status as 'building', reason: done.reason ?? null, lines };
      }
      const stream = deps.sse.open(request);
      // Checked before the stream opens, so an unknown build is a 404, not an empty stream.
      const events = await templates.buildLog(actor, params.id, params.buildId, stream.signal, true);
      return stream.respond(
        (async function* () {
          for await (const e of events) yield e.line ? { data: e.line } : { event: 'done', data: e.done };
        })(),
      ) as unknown as { status: 'building'; reason: null; lines: [] };
    }, {
      params: BuildParams,
      query: BuildLogQuery,
      response: { 200: BuildLog },
      detail: { ...op('readTemplateBuildLog', ['TEMPLATE_NOT_FOUND', 'BUILD_NOT_FOUND', 'QUOTA_EXCEEDED']),
        summary: "A build's output: what it wrote so far, or followed live (follow=true, SSE)",
        responses: { 200: BuildLogStream },
      },
    });
}
