// What GET /api/templates answers: each template of the registry, whether Keel can make its image with
// no registry, and whether the engine holds that image now (a create then skips the build or pull).
import { errorFields, type Logger } from '../../../platform/runtime';
import type { Engine } from '../engine/engine';
import type { TemplateInfo } from './templates.model';
import { templateImage } from './template-image';
import { DEFAULT_TEMPLATE, type TemplateRegistry } from './templates';

type ImageSettings = Parameters<typeof templateImage>[1];

export function createTemplatesService(deps: { registry: TemplateRegistry; engine: Engine; settings: ImageSettings; log: Logger }) {
  return {
    /** Every template, in declaration order; `imagePresent` is null when the engine does not answer. */
    async list(): Promise<{ templates: TemplateInfo[]; default: string }> {
      const templates = await Promise.all(
        deps.registry.all().map(async (t): Promise<TemplateInfo> => {
          const imagePresent = await deps.engine.imageExists(templateImage(t, deps.settings)).catch((e) => {
            deps.log.warn('template image not checked', { template: t.name, ...errorFields(e) });
            return null;
          });
          // Keel builds a template with `build` itself, without a registry (images/template-image.ts).
          return { name: t.name, description: t.description, offline: t.build !== undefined, imagePresent };
        }),
      );
      return { templates, default: DEFAULT_TEMPLATE };
    },
  };
}

export type TemplatesService = ReturnType<typeof createTemplatesService>;
