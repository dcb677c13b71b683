// Schemas of GET /api/templates: the templates a workspace can be created from.
import { t, type Static } from 'elysia';

export const TemplateInfo = t.Object({
  name: t.String({ description: 'What `template` takes in POST /api/workspaces' }),
  description: t.String(),
  offline: t.Boolean({ description: 'Keel makes the image itself, with no registry (the first create builds it)' }),
  imagePresent: t.Union([t.Boolean(), t.Null()], {
    description: "The engine holds the template's image now, so a create neither builds nor pulls it; null when the engine does not answer",
  }),
  builtIn: t.Boolean({ description: 'shipped with Keel (templates/); false for templates people built (POST /api/templates)' }),
  public: t.Boolean({ description: 'every actor may use it: built-ins, and templates an admin made public' }),
  owner: t.Nullable(t.String({ description: 'who made it; null for built-ins' })),
  id: t.Optional(t.String({ description: 'templates people built: GET /api/templates/{id}' })),
  status: t.Optional(t.Union([t.Literal('building'), t.Literal('ready'), t.Literal('failed')])),
  reason: t.Optional(t.Nullable(t.String())),
  version: t.Optional(t.Integer({ minimum: 0 })),
});
export type TemplateInfo = Static<typeof TemplateInfo>;

export const TemplateList = t.Object({
  templates: t.Array(TemplateInfo),
  default: t.String({ description: 'The template a create without `template` uses' }),
});
