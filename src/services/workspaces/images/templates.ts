// Workspace templates, declared as data in templates/<name>/template.json and checked once at load.
// A template names its image, main command, environment, working directory, the services the
// supervisor runs beside the main command, the container ports behind the workspace URLs, and limits.
import { t, type Static } from 'elysia';
import { Value } from '@sinclair/typebox/value';
import bunTypescript from '../../../../templates/bun-typescript/template.json';
import minimal from '../../../../templates/minimal/template.json';

const ContainerPort = t.Integer({ minimum: 1, maximum: 65535 });

export const TemplateSchema = t.Object({
  name: t.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }),
  description: t.String(),
  image: t.String({ minLength: 1 }),
  /**
   * Present when Keel builds the image itself (engine/template-image.ts): `minimal` offline from
   * busybox-static; `bun-typescript` from its Dockerfile where a registry answers, else offline from
   * this machine's bun. Absent: the image must be present or pullable.
   */
  build: t.Optional(t.Union([t.Literal('minimal'), t.Literal('bun-typescript')])),
  user: t.String({ pattern: '^\\d+:\\d+$' }),
  workdir: t.String({ pattern: '^/' }),
  env: t.Record(t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), t.String()),
  command: t.String({ minLength: 1 }),
  services: t.Array(t.Object({ name: t.String({ pattern: '^[a-z0-9][a-z0-9-]*$' }), command: t.String({ minLength: 1 }) })),
  ports: t.Object({ codeServer: ContainerPort, ssh: ContainerPort, rdp: ContainerPort }),
  resources: t.Object({
    memoryMb: t.Integer({ minimum: 16 }),
    cpus: t.Number({ exclusiveMinimum: 0 }),
    pids: t.Integer({ minimum: 16 }),
  }),
});
export type Template = Static<typeof TemplateSchema>;

export const DEFAULT_TEMPLATE = 'bun-typescript';

function load(raw: unknown[]): Map<string, Template> {
  const out = new Map<string, Template>();
  for (const r of raw) {
    if (!Value.Check(TemplateSchema, r)) {
      const first = [...Value.Errors(TemplateSchema, r)][0];
      throw new Error(`template ${(r as { name?: string }).name ?? '?'} is invalid at ${first?.path}: ${first?.message}`);
    }
    out.set(r.name, r);
  }
  return out;
}

export const templates: ReadonlyMap<string, Template> = load([bunTypescript, minimal]);
