// Schemas of the previews API: create, the preview view, list, revoke.
import { t } from 'elysia';

export const PREVIEW_TTL_DEFAULT_S = 3600;
export const PREVIEW_TTL_MAX_S = 7 * 24 * 3600;

export const PreviewBody = t.Object(
  {
    port: t.Integer({ minimum: 1, maximum: 65535, description: "the workspace's port, on its own network" }),
    ttlSeconds: t.Optional(t.Integer({ minimum: 1, maximum: PREVIEW_TTL_MAX_S, default: PREVIEW_TTL_DEFAULT_S, description: `seconds the link works (default ${PREVIEW_TTL_DEFAULT_S}, at most 7 days)` })),
  },
  { additionalProperties: false },
);

export const PreviewView = t.Object({
  id: t.String(),
  port: t.Number({ multipleOf: 1 }),
  url: t.String({
    description: '`http://<label>.<APP_PREVIEW_DOMAIN>:<APP_PREVIEW_PORT>/` (or APP_PREVIEW_PUBLIC_URL\'s form): a host of its own, served by Keel; works without headers until expiresAt or a revoke',
  }),
  expiresAt: t.String({ format: 'date-time' }),
  revoked: t.Optional(t.Boolean()),
});

export const PreviewList = t.Object({ previews: t.Array(PreviewView) });
export const PreviewParams = t.Object({ id: t.String({ maxLength: 64 }), pid: t.String({ maxLength: 64 }) });
export const PreviewRevoked = t.Object({ id: t.String(), revoked: t.Literal(true) }, { description: 'the answer of a revoke (200)' });
