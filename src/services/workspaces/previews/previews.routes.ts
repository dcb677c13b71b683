// HTTP wiring of preview links on the workspace API: create, list, revoke. The links themselves are
// served by the preview listener (previews.proxy.ts).
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { ErrorEnvelope } from '../../../platform/http/errors';
import { IdParams } from '../lifecycle/lifecycle.model';
import { workspaceOperation as op } from '../workspaces.errors';
import { PREVIEW_TTL_DEFAULT_S, PreviewBody, PreviewList, PreviewParams, PreviewRevoked, PreviewView } from './previews.model';
import type { PreviewsService } from './previews.service';

const ERRORS = { 400: ErrorEnvelope, 401: ErrorEnvelope, 404: ErrorEnvelope, 429: ErrorEnvelope };

export function previewsRoutes(deps: { auth: WorkspaceAuthPlugin; previews: PreviewsService }) {
  const { previews } = deps;
  return new Elysia({ name: 'workspaces.previews' })
    .use(deps.auth)
    .post(
      '/api/workspaces/:id/previews',
      ({ params, body, actor, set }) => {
        set.status = 201;
        return previews.create(actor, params.id, body);
      },
      {
        params: IdParams,
        body: PreviewBody,
        response: { 201: PreviewView, ...ERRORS },
        detail: {
          tags: ['previews'],
          ...op('createWorkspacePreview', ['WORKSPACE_NOT_FOUND']),
          summary: "A link to one of the workspace's ports, served by Keel on APP_PREVIEW_PORT",
          description:
            '`url` (`http://<APP_PUBLIC_HOST>:<APP_PREVIEW_PORT>/p/<secret>/`) needs no header: whoever holds it reaches the port, over the workspace\'s own network, ' +
            `with HTTP (bodies streamed) and WebSocket upgrades, until \`expiresAt\` (\`ttlSeconds\`, default ${PREVIEW_TTL_DEFAULT_S}, at most 7 days) or a revoke; ` +
            'then it answers 410 (`PREVIEW_EXPIRED`, `PREVIEW_REVOKED`), an unknown link 404. The workspace may be stopped when the link is made; the link answers 409 until it runs.',
        },
      },
    )
    .get('/api/workspaces/:id/previews', async ({ params, actor }) => ({ previews: await previews.list(actor, params.id) }), {
      params: IdParams,
      response: { 200: PreviewList, ...ERRORS },
      detail: { ...op('listWorkspacePreviews', ['WORKSPACE_NOT_FOUND']), tags: ['previews'], summary: "The workspace's preview links, newest first (revoked ones marked)" },
    })
    .delete('/api/workspaces/:id/previews/:pid', ({ params, actor }) => previews.revoke(actor, params.id, params.pid), {
      params: PreviewParams,
      response: { 200: PreviewRevoked, ...ERRORS },
      detail: {
        tags: ['previews'],
        ...op('revokeWorkspacePreview', ['WORKSPACE_NOT_FOUND', 'PREVIEW_NOT_FOUND']),
        summary: 'Revoke a preview link at once (it answers 410 from the next request)',
        description: 'Errors: 404 WORKSPACE_NOT_FOUND or PREVIEW_NOT_FOUND.',
      },
    });
}
