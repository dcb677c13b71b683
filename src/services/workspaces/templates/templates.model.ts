// Schemas of the templates people bring: POST /api/templates, its views, a build's log stream.
import { t, type Static } from 'elysia';

const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';

export const CreateTemplateBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 63, description: 'unique among your templates; what `template` takes in POST /api/workspaces (built-in names are taken)' }),
    dockerfile: t.String({ minLength: 1, maxLength: 1024 * 1024, description: "the Dockerfile's text; `FROM keel/minimal` and `FROM keel/bun-typescript` name the built-in templates' images" }),
    files: t.Optional(t.Record(t.String(), t.String(), { description: 'the build context: `{"path": "text"}` or `"base64:..."` for bytes; paths relative, inside the context; at most APP_TEMPLATE_CONTEXT_BYTES (64 MiB) in all' })),
    startCommand: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: "the workspace's main command (`/bin/sh -c`); default: the image's CMD" })),
    readyCommand: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: 'run by `/bin/sh -c` after start until it exits 0; only then is the workspace running (at most 120 s)' })),
    user: t.Optional(t.String({ pattern: '^\\d+:\\d+$', description: "`uid:gid`; default: the image's USER (a name read from its /etc/passwd), else 1000:1000" })),
    workdir: t.Optional(t.String({ pattern: '^/', maxLength: 1024, description: "default: the image's WORKDIR, else /workspace" })),
    env: t.Optional(t.Record(t.String({ pattern: ENV_NAME }), t.String({ maxLength: 32768 }), { description: "added to the image's ENV" })),
    cpu: t.Optional(t.Number({ minimum: 0.01, maximum: 64, description: 'CPUs of a workspace made from it (default 1; at most APP_TEMPLATE_MAX_CPUS, 4 by default)' })),
    memoryMb: t.Optional(t.Integer({ minimum: 16, maximum: 1024 * 1024, description: 'memory limit of a workspace made from it (default 512; at most APP_TEMPLATE_MAX_MEMORY_MB, 8192 by default)' })),
    public: t.Optional(t.Boolean({ description: 'admins only: every actor may use it' })),
  },
  { additionalProperties: false },
);
export type CreateTemplateInput = Static<typeof CreateTemplateBody>;

export const BuildAccepted = t.Object({
  id: t.String(),
  name: t.String(),
  status: t.Literal('building'),
  buildId: t.String({ description: 'follow it at GET /api/templates/{id}/builds/{buildId}/logs?follow=true' }),
  createdAt: t.String(),
});

export const TemplateView = t.Object({
  id: t.String(),
  name: t.String(),
  owner: t.String(),
  public: t.Boolean(),
  builtIn: t.Literal(false),
  status: t.Union([t.Literal('building'), t.Literal('ready'), t.Literal('failed')], { description: 'ready: a version is built (a rebuild may be running: see buildId); failed: no version, `reason` names the failing step' }),
  reason: t.Nullable(t.String()),
  version: t.Integer({ minimum: 0, description: 'the version new workspaces get (0: none yet)' }),
  buildId: t.String({ description: 'the latest build' }),
  startCommand: t.Nullable(t.String()),
  readyCommand: t.Nullable(t.String()),
  user: t.Nullable(t.String()),
  workdir: t.Nullable(t.String()),
  env: t.Record(t.String(), t.String()),
  cpu: t.Nullable(t.Number()),
  memoryMb: t.Nullable(t.Integer()),
  createdAt: t.String(),
  updatedAt: t.String(),
});
export type TemplateView = Static<typeof TemplateView>;

export const SnapshotTemplateBody = t.Object({ name: t.String({ minLength: 1, maxLength: 63, description: 'the new template\'s name' }) }, { additionalProperties: false });

export const TemplateParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) });
export const BuildParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }), buildId: t.String({ minLength: 1, maxLength: 64 }) });
export const BuildLogQuery = t.Object({ follow: t.Optional(t.BooleanString({ description: 'true: SSE, the log from its start then live, last an `event: done`' })) });
export const TemplateDeleted = t.Object({ id: t.String(), deleted: t.Literal(true) });
export const BuildLog = t.Object({
  status: t.Union([t.Literal('building'), t.Literal('ready'), t.Literal('failed')]),
  reason: t.Nullable(t.String()),
  lines: t.Array(t.Object({ timestamp: t.String(), message: t.String() })),
});

/** The OpenAPI answer of a followed build log. */
export const BuildLogStream = {
  description: 'The build log so far (JSON); with `follow=true` a text/event-stream',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string' as const,
        description:
          'Server-Sent Events: the whole log from the start of the build, then each line as the engine writes it, each an event of the default ' +
          'type whose `data:` is `{"timestamp","message"}`; last one `event: done` with `{"status": "ready"|"failed", "reason"?}`.',
      },
      example: 'data: {"timestamp":"2026-11-28T10:00:00.000Z","message":"Step 1/2 : FROM keel/minimal:1"}\n\nevent: done\ndata: {"status":"ready"}\n\n',
    },
  },
};
