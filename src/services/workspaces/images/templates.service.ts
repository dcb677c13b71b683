// What GET /api/templates answers: each template of the registry, whether Keel can make its image with
// no registry, and whether the engine holds that image now (a create then skips the build or pull).
import { errorFields, type Logger } from '../../../platform/runtime';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Engine } from '../engine/engine';
import type { CustomTemplates } from '../templates/templates.service';
import type { TemplateInfo } from './templates.model';
import { templateImage } from './template-image';
import { DEFAULT_TEMPLATE, type TemplateRegistry } from './templates';

type ImageSettings = Parameters<typeof templateImage>[1];

export function createTemplatesService(deps: { registry: TemplateRegistry; engine: Engine; settings: ImageSettings; log: Logger; custom?: CustomTemplates }) {
  return {
    /**
     * The built-in templates in declaration order, then the caller's own and the public ones people
     * built; `imagePresent` is null when the engine does not answer.
     */
    async list(actor: Actor): Promise<{ templates: TemplateInfo[]; default: string }> {
      const templates = await Promise.all(
        deps.registry.all().map(async (t): Promise<TemplateInfo> => {
          const imagePresent = await deps.engine.imageExists(templateImage(t, deps.settings)).catch((e) => {
            deps.log.warn('template image not checked', { template: t.name, ...errorFields(e) });
            return null;
          });
          // Keel builds a template with `build` itself, without a registry (images/template-image.ts).
          return { name: t.name, description: t.description, offline: t.build !== undefined, imagePresent, builtIn: true, public: true, owner: null };
        }),
      );
      for (const c of (await deps.custom?.list(actor)) ?? []) {
        templates.push({
          name: c.name, description: `built from a Dockerfile by ${c.owner}`, offline: true, imagePresent: c.version > 0 ? true : false,
          builtIn: false, public: c.public, owner: c.owner, id: c.id, status: c.status, reason: c.reason, version: c.version,
        });
      }
      return { templates, default: DEFAULT_TEMPLATE };
    },
  };
}

export type TemplatesService = ReturnType<typeof createTemplatesService>;
