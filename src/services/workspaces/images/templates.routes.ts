// HTTP wiring of the template registry: GET /api/templates (what the dashboard's create form offers).
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { TemplateList } from './templates.model';
import type { TemplatesService } from './templates.service';
import { workspaceOperation as op } from '../workspaces.errors';

export function templatesRoutes(deps: { auth: WorkspaceAuthPlugin; templates: TemplatesService }) {
  return new Elysia({ name: 'workspaces.templates', detail: { tags: ['workspaces'] } })
    .use(deps.auth)
    .get('/api/templates', ({ actor }) => deps.templates.list(actor), {
      response: { 200: TemplateList },
      detail: { ...op('listTemplates'),
        summary: 'The templates a workspace can be created from',
        description:
          'Each template with its description, `offline` (Keel makes its image with no registry) and `imagePresent` (the engine holds ' +
          'the image now, so a create neither builds nor pulls it; null when the engine does not answer). `default` is the template a ' +
          'create without `template` uses.',
      },
    });
}
