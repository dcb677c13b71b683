// Workspace templates, declared as data in templates/<name>/template.json, checked once and kept in a
// registry (with the versions of templates people built, added by templates/templates.service.ts) that index.ts builds and passes to the features (lifecycle, stats, GET /api/templates).
// A template names its image, main command, environment, working directory, the services the
// supervisor runs beside the main command, the container ports behind the workspace URLs, and limits.
import { t, type Static } from 'elysia';
import { Value } from '@sinclair/typebox/value';
import type { Engine } from '../engine/engine';
import bunTypescript from '../../../../templates/bun-typescript/template.json';
import minimal from '../../../../templates/minimal/template.json';

const ContainerPort = t.Integer({ minimum: 1, maximum: 65535 });

export const TemplateSchema = t.Object({
  name: t.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }),
  description: t.String(),
  image: t.String({ minLength: 1 }),
  /**
   * Present when Keel builds the image itself (images/template-image.ts): `minimal` offline from
   * busybox-static; `bun-typescript` from its Dockerfile where a registry answers, else offline from
   * this machine's bun. Absent: the image must be present or pullable.
   */
  build: t.Optional(t.Union([t.Literal('minimal'), t.Literal('bun-typescript')])),
  user: t.String({ pattern: '^\\d+:\\d+$' }),
  workdir: t.String({ pattern: '^/' }),
  env: t.Record(t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), t.String()),
  command: t.String({ minLength: 1 }),
  /** Run by `/bin/sh -c` after the container starts, until it exits 0: only then is the workspace `running`. */
  readyCommand: t.Optional(t.String({ minLength: 1 })),
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

/** The templates shipped in templates/: the registry index.ts passes to the features that read them. */
export const BUILTIN_TEMPLATES: readonly unknown[] = [bunTypescript, minimal];

/** Checks each declaration against TemplateSchema once; a bad one stops start-up naming it. */
export function createTemplateRegistry(raw: readonly unknown[] = BUILTIN_TEMPLATES) {
  const byName = new Map<string, Template>();
  for (const r of raw) {
    if (!Value.Check(TemplateSchema, r)) {
      const first = [...Value.Errors(TemplateSchema, r)][0];
      throw new Error(`template ${(r as { name?: string }).name ?? '?'} is invalid at ${first?.path}: ${first?.message}`);
    }
    byName.set(r.name, r);
  }
  if (!byName.has(DEFAULT_TEMPLATE)) throw new Error(`the default template ${DEFAULT_TEMPLATE} is not declared`);
  /** Versions of templates people built (templates/), by `<id>.v<version>`: what their workspaces name. */
  const built = new Map<string, Template>();
  /** How a built version's image is made on an engine that lacks it (several engines: each on first use). */
  const builders = new Map<string, (engine: Engine) => Promise<void>>();
  return {
    get: (name: string): Template | undefined => byName.get(name) ?? built.get(name),
    /** A built template version; it stays while Keel runs, so a workspace made from it keeps starting. */
    add: (t: Template, build?: (engine: Engine) => Promise<void>) => {
      built.set(t.name, t);
      if (build) builders.set(t.name, build);
    },
    /** Builds a built version's image on `engine` (undefined for a template whose image Keel cannot make this way). */
    builderOf: (name: string): ((engine: Engine) => Promise<void>) | undefined => builders.get(name),
    isBuiltIn: (name: string) => byName.has(name),
    names: (): string[] => [...byName.keys()],
    all: (): Template[] => [...byName.values()],
  };
}

export type TemplateRegistry = ReturnType<typeof createTemplateRegistry>;
