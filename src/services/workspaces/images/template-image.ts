// Which image a template runs and how Keel makes it when the engine lacks it: `minimal` is always
// built offline; `bun-typescript` from its Dockerfile where a registry answers, else offline from
// this machine's parts (bun-image.ts); any other template's image is pulled.
import type { Logger } from '../../../platform/runtime';
import type { Template } from './templates';
import type { WorkspacesConfig } from '../workspaces.config';
import type { Engine } from '../engine/engine';
import { buildMinimalImage } from './minimal-image';
import { buildBunDockerfileImage, buildBunOfflineImage, offlineParts, registryAnswers } from './bun-image';

type Settings = Pick<WorkspacesConfig, 'minimalImage' | 'bunImage' | 'busyboxPath' | 'bunPath' | 'templatesDir' | 'registryProbeUrl'>;
type Log = Pick<Logger, 'info' | 'warn'>;

/** The image a template runs: Keel-built ones are tagged by APP_WORKSPACE_MINIMAL_IMAGE / APP_WORKSPACE_BUN_IMAGE. */
export function templateImage(template: Pick<Template, 'build' | 'image'>, settings: Settings): string {
  if (template.build === 'minimal') return settings.minimalImage;
  if (template.build === 'bun-typescript') return settings.bunImage;
  return template.image;
}

/** Builds a template's image as `ref`; false for a template Keel cannot build (its image is pulled). */
export async function buildTemplateImage(engine: Engine, template: Pick<Template, 'build'>, ref: string, settings: Settings, log: Log): Promise<boolean> {
  if (template.build === 'minimal') {
    log.info('building the minimal image offline', { image: ref });
    await buildMinimalImage(engine, ref, settings.busyboxPath);
    return true;
  }
  if (template.build !== 'bun-typescript') return false;
  if (await registryAnswers(settings.registryProbeUrl)) {
    log.info('a registry answers: building the bun-typescript image from its Dockerfile', { image: ref });
    try {
      await buildBunDockerfileImage(engine, ref, settings.templatesDir);
      return true;
    } catch (e) {
      // The registry answered but the build needs more (apt, code-server's download): offline still works.
      log.warn('the Dockerfile build failed; building the image offline instead', { image: ref, reason: (e as Error).message.slice(0, 300) });
    }
  } else {
    log.info('no registry answers: building the bun-typescript image offline from this machine', { image: ref });
  }
  await buildBunOfflineImage(engine, ref, offlineParts(settings));
  return true;
}
