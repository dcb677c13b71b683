// Template versions as images on the engines: a version's build (its built-in bases first, the
// workspace user's /workspace, the time limit, at most APP_TEMPLATE_BUILDS at once), its entry in the
// template registry (the image's USER, WORKDIR, ENV and CMD unless the template says otherwise), the
// same build on another engine on first use or again when its image went, and the collection of the
// images of versions no one gets any more. templates.service.ts runs builds as durable jobs over it.
import { errorFields, type Logger } from '../../../platform/runtime';
import { EngineError, type Engine } from '../engine/engine';
import { buildTemplateImage, templateImage } from '../images/template-image';
import type { Template, TemplateRegistry } from '../images/templates';
import type { WorkspacesConfig } from '../workspaces.config';
import { checkDockerfile, contextFiles, contextTar, fromBuiltin, lastUser, numericUser, ownWorkspace } from './templates.context';
import type { TemplatesRepository } from './templates.repository';
import type { TemplateRow } from './templates.tables';

/** Ports behind a workspace's URLs: a template's image may serve them or not. */
const PORTS = { codeServer: 8080, ssh: 22, rdp: 3389 };
const DEFAULT_RESOURCES = { memoryMb: 512, cpus: 1, pids: 256 };

/** The registry name of a template's version: what its workspaces name. */
export const templateKey = (id: string, version: number) => `${id}.v${version}`;
/** The image of a template's version. */
export const versionImage = (id: string, version: number) => `keel-template:${id}-v${version}`;
const shQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const SHELL = /^(\/(usr\/)?bin\/)?(sh|bash|ash|dash)$/;
/** The main command of a template whose image gives none: it stays up, as the built-in ones do. */
const IDLE = 'echo "keel: workspace ready"; while :; do sleep 3600; done';

export type TemplateImageSettings = Pick<WorkspacesConfig, 'templates' | 'minimalImage' | 'bunImage' | 'busyboxPath' | 'bunPath' | 'templatesDir' | 'registryProbeUrl'>;

export function createTemplateImages(deps: {
  repo: TemplatesRepository;
  registry: TemplateRegistry;
  engine: Engine;
  settings: TemplateImageSettings;
  log: Logger;
  /** Which of these versions (registry names) a workspace still names (their images are kept). */
  inUse?: (names: string[]) => Promise<Set<string>>;
}) {
  const { repo, registry, engine, settings, log } = deps;
  const key = templateKey;
  const imageRef = versionImage;

  /** The template as the registry holds it: the image's USER, WORKDIR, ENV and CMD unless the template says otherwise. */
  async function register(t: TemplateRow, version: number): Promise<void> {
    const image = imageRef(t.id, version);
    let config = await engine.imageConfig(image);
    if (!config) {
      // Built on an engine that was the first to answer then, not now (APP_ENGINES), or removed meanwhile: made here too.
      log.warn('a built template image is not on the engine; building it there', { template: t.id, image });
      await buildOn(engine, t, image, (line) => log.debug('template build', { template: t.id, line }));
      config = await engine.imageConfig(image);
      if (!config) return log.warn('a built template image is gone from the engine', { template: t.id, image });
    }
    const cmd = [...(config.entrypoint ?? []), ...(config.cmd ?? [])];
    // A bare shell (what base images default to) would exit at once without a terminal: the workspace idles instead.
    const command =
      t.startCommand ??
      (cmd.length === 3 && SHELL.test(cmd[0]!) && cmd[1] === '-c' ? cmd[2]! : cmd.length && !(cmd.length === 1 && SHELL.test(cmd[0]!)) ? cmd.map(shQuote).join(' ') : IDLE);
    const user = t.user ?? (await runUser(image, config.user, t.id));
    const entry: Template = {
      name: key(t.id, version),
      description: `${t.name} (version ${version})`,
      image,
      user,
      workdir: t.workdir ?? (config.workdir || '/workspace'),
      env: JSON.parse(t.env) as Record<string, string>,
      command,
      readyCommand: t.readyCommand ?? undefined,
      services: [],
      ports: PORTS,
      resources: { memoryMb: t.memoryMb ?? DEFAULT_RESOURCES.memoryMb, cpus: t.cpu ?? DEFAULT_RESOURCES.cpus, pids: DEFAULT_RESOURCES.pids },
    };
    // Another engine that lacks the image (APP_ENGINES) builds it from the same Dockerfile and context on first use.
    registry.add(entry, async (other) => {
      log.info('building a template version on an engine that lacks it', { template: t.id, version, image });
      try {
        await buildOn(other, t, image, (line) => log.debug('template build', { template: t.id, line }));
      } catch (e) {
        throw new EngineError(`template ${t.name} version ${version} could not be built on this engine: ${(e as Error).message.slice(0, 400)}`);
      }
    });
  }

  /** A ready version whose image is gone from the engine: built again from its Dockerfile and context, then registered. */
  async function restore(t: TemplateRow, version: number): Promise<void> {
    const image = imageRef(t.id, version);
    log.warn('a built template image is gone from the engine; building it again from its Dockerfile', { template: t.id, version, image });
    const release = await buildSlot(() => {});
    try {
      await buildOn(engine, t, image, (line) => log.debug('template build', { template: t.id, line }));
      await register(t, version);
      log.info('template image built again', { template: t.id, version, image });
    } catch (e) {
      log.warn('template image not built again; its workspaces cannot start until it is rebuilt', { template: t.id, version, ...errorFields(e) });
    } finally {
      release();
    }
  }

  /** Builds template `t` as `image` on `eng`: its built-in bases first (made there when absent), then its Dockerfile and context. */
  async function buildOn(eng: Engine, t: TemplateRow, image: string, onLine: (line: string) => void, cancel?: AbortSignal): Promise<void> {
    const checked = checkDockerfile(t.dockerfile, (builtin) => (builtin === 'minimal' ? settings.minimalImage : settings.bunImage));
    for (const base of checked.bases) {
      const template = registry.get(base)!;
      const ref = templateImage(template, settings);
      if (!(await eng.imageExists(ref))) {
        onLine(`keel: making the built-in ${base} image first`);
        await buildTemplateImage(eng, template, ref, settings, log);
      }
    }
    // The workspace's user owns its volume: /workspace made theirs, unless the built-in base's 1000:1000 already is.
    const owner = t.user ?? lastUser(t.dockerfile) ?? '1000:1000';
    const text = owner === '1000:1000' && fromBuiltin(t.dockerfile) ? checked.text : ownWorkspace(checked.text, owner);
    const tar = await contextTar(text, contextFiles(JSON.parse(t.files) as Record<string, string>, settings.templates.contextBytes));
    const timeout = AbortSignal.timeout(settings.templates.buildTimeoutMs);
    const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout;
    // No build labels: the legacy builder makes each a step of its own (a layer copied on vfs); the tag names the template.
    await eng.buildStreaming(tar, image, { onLine, signal });
    // A USER only the base image sets is known now: /workspace is made that user's in a step of its own.
    if (t.user || lastUser(t.dockerfile) || fromBuiltin(t.dockerfile)) return;
    const base = (await eng.imageConfig(image))?.user ?? '';
    if (!base || (numericUser(base, null, null) ?? base) === owner || !/^[\w.-]+(:[\w.-]+)?$/.test(base)) return;
    onLine(`keel: making /workspace the base image's USER's (${base})`);
    await eng.buildStreaming(await contextTar(ownWorkspace(`FROM ${image}`, base), []), image, { onLine, signal });
  }

  /** The image's USER as `uid:gid` (a name read from its /etc/passwd and /etc/group); none: 1000:1000. */
  async function runUser(image: string, spec: string, template: string): Promise<string> {
    if (!spec) return '1000:1000';
    const numeric = numericUser(spec, null, null);
    if (numeric) return numeric;
    const files = await engine.imageFiles(image, ['/etc/passwd', '/etc/group']).catch((e) => {
      log.warn('the image\'s users not read', { template, ...errorFields(e) });
      return {} as Record<string, string | null>;
    });
    const found = numericUser(spec, files['/etc/passwd'] ?? null, files['/etc/group'] ?? null);
    if (!found) log.warn('the image\'s USER is not in its /etc/passwd; workspaces run as 1000:1000', { template, user: spec });
    return found ?? '1000:1000';
  }

  /** Builds running now (at most APP_TEMPLATE_BUILDS) and those waiting for one of them to end, first come first served. */
  let building = 0;
  const queued: (() => void)[] = [];
  /** A build slot; the returned function gives it back (to the next waiting build, if any). */
  async function buildSlot(onLine: (line: string) => void): Promise<() => void> {
    if (building < settings.templates.builds) building++;
    else {
      onLine(`keel: waiting for one of the ${settings.templates.builds} builds that run at once to end (APP_TEMPLATE_BUILDS)`);
      await new Promise<void>((r) => queued.push(r));
    }
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = queued.shift();
      if (next) next();
      else building--;
    };
  }

  /** Images removed by this process (a version's image is made again on demand, images/templates.ts builderOf). */
  const removed = new Set<string>();
  let sweeping: Promise<void> = Promise.resolve();

  /**
   * Removes the images of versions nobody gets any more: not the template's current version (or the
   * template deleted) and named by no workspace. The engine refuses an image a container uses (a warm
   * entry, a workspace being made): that one is tried again next time. A workspace whose container
   * must be made again later gets the image built again from the same Dockerfile (builderOf).
   */
  async function sweep(): Promise<void> {
    if (!deps.inUse) return;
    const stale = (await repo.replaced()).filter((b) => !removed.has(b.image)).map((b) => ({ key: key(b.templateId, b.version), image: b.image, template: b.templateId }));
    if (!stale.length) return;
    const used = await deps.inUse(stale.map((s) => s.key));
    for (const s of stale) {
      if (used.has(s.key)) continue;
      try {
        await engine.removeImage(s.image);
        removed.add(s.image);
        log.info('image of a template version no workspace uses removed', { template: s.template, image: s.image });
      } catch (e) {
        log.debug('template image kept (the engine refused its removal)', { image: s.image, ...errorFields(e) });
      }
    }
  }

  /** One sweep at a time; a call while one runs queues the next. */
  function collect(): Promise<void> {
    sweeping = sweeping.then(sweep).catch((e) => log.warn('template images not collected', errorFields(e)));
    return sweeping;
  }

  return { register, restore, buildOn, buildSlot, collect };
}

export type TemplateImages = ReturnType<typeof createTemplateImages>;
