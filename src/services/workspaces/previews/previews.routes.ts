// HTTP wiring of preview links on the workspace API: create, list, revoke. The links themselves are
// served by the preview listener (previews.proxy.ts), each on a host name of its own.
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { IdParams } from '../lifecycle/lifecycle.model';
import { workspaceOperation as op } from '../workspaces.errors';
import { PREVIEW_TTL_DEFAULT_S, PreviewBody, PreviewList, PreviewParams, PreviewRevoked, PreviewView } from './previews.model';
import type { PreviewsService } from './previews.service';

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
        response: { 201: PreviewView },
        detail: {
          tags: ['previews'],
          ...op('createWorkspacePreview', ['WORKSPACE_NOT_FOUND', 'WORKSPACE_NOT_RUNNING', 'ENGINE_UNAVAILABLE']),
          summary: "A link to one of the workspace's ports, on a host name of its own served by Keel on APP_PREVIEW_PORT",
          description:
            '`url` is `http://<label>.<APP_PREVIEW_DOMAIN>:<APP_PREVIEW_PORT>/` (`APP_PREVIEW_PUBLIC_URL`, such as `https://{label}.preview.example.com`, replaces the form behind a TLS proxy); ' +
            'the label is a secret of 40 lower-case hex digits, different for every preview, so each preview is a browser origin of its own (cookies, storage and service workers stay on it) ' +
            'and an app that loads absolute paths (`/assets/x.js`) works. Keel routes on the `Host` header. The link needs no header: whoever holds it reaches the port over the workspace\'s own network, ' +
            `with HTTP (bodies streamed) and WebSocket upgrades, until \`expiresAt\` (\`ttlSeconds\`, default ${PREVIEW_TTL_DEFAULT_S}, at most 7 days) or a revoke; ` +
            'then it answers 410 (`PREVIEW_EXPIRED`, `PREVIEW_REVOKED`) and its open WebSockets are closed (code 1008) within a second; an unknown host answers 404 `PREVIEW_NOT_FOUND`, ' +
            'a link whose workspace has stopped 503 `PREVIEW_UNAVAILABLE` (with Retry-After) until it runs again, a port nothing listens on 502 `PREVIEW_UNREACHABLE`. ' +
            "The workspace's answers pass unchanged but for a `Set-Cookie` `Domain` attribute (removed) and `Service-Worker-Allowed` (dropped). " +
            'A link is made only for a running workspace.',
        },
      },
    )
    .get('/api/workspaces/:id/previews', async ({ params, actor }) => ({ previews: await previews.list(actor, params.id) }), {
      params: IdParams,
      response: { 200: PreviewList },
      detail: { ...op('listWorkspacePreviews', ['WORKSPACE_NOT_FOUND']), tags: ['previews'], summary: "The workspace's preview links, newest first (revoked ones marked)" },
    })
    .delete('/api/workspaces/:id/previews/:pid', ({ params, actor }) => previews.revoke(actor, params.id, params.pid), {
      params: PreviewParams,
      response: { 200: PreviewRevoked },
      detail: {
        tags: ['previews'],
        ...op('revokeWorkspacePreview', ['WORKSPACE_NOT_FOUND', 'PREVIEW_NOT_FOUND']),
        summary: 'Revoke a preview link at once: 200 `{id, revoked: true}`; the link answers 410 from the next request and its WebSockets are closed',
        description: 'Revoking a revoked link answers the same.',
      },
    });
}
