// Templates people bring: a Dockerfile and its context, built on the engine as a durable job (a build
// left running by a crash is run again at start-up), each build a version whose image is tagged apart,
// so a rebuild or a delete never changes what a running workspace uses. A ready version joins the
// template registry (images/templates.ts) as `<id>.v<version>`: what its workspaces name and start from.
// This module: the templates' rows, who may use which, and builds as jobs (their log, followers,
// cancel); templates.images.ts: the images on the engines (building, registering, collecting).
import type { Actor } from '../../../platform/auth/workspace-token';
import { canAccess } from '../../../platform/auth/workspace-token';
import { errorFields, newId, type Clock, type Logger } from '../../../platform/runtime';
import type { Engine } from '../engine/engine';
import type { Template, TemplateRegistry } from '../images/templates';
import { checkDockerfile, contextFiles, keelImages } from './templates.context';
import { createTemplateImages, templateKey as key, versionImage as imageRef, type TemplateImageSettings } from './templates.images';
import type { TemplatesRepository } from './templates.repository';
import type { TemplateBuildRow, TemplateRow } from './templates.tables';
import type { CreateTemplateInput, TemplateView } from './templates.model';
import { WorkspaceErrors } from '../workspaces.errors';
import type { Quotas } from '../quotas';

/** What a build keeps of its output: the last lines, at most this many bytes. */
const LOG_MAX_BYTES = 1024 * 1024;
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export interface BuildLine {
  timestamp: string;
  message: string;
}
/** A build in flight: its lines so far and who follows them. */
interface Live {
  lines: BuildLine[];
  bytes: number;
  followers: Set<(e: BuildLogEntry) => void>;
  /** Aborted by a delete of the template: the build stops and its slot goes to the next. */
  cancel: AbortController;
}

/** One entry of a build's log: a line, or its end. */
export type BuildLogEntry = { line?: BuildLine; done?: { status: string; reason?: string } };

export function createCustomTemplates(deps: {
  repo: TemplatesRepository;
  registry: TemplateRegistry;
  engine: Engine;
  settings: TemplateImageSettings;
  clock: Clock;
  log: Logger;
  /** Which of these versions (registry names) a workspace still names (their images are kept). */
  inUse?: (names: string[]) => Promise<Set<string>>;
  quotas: Pick<Quotas, 'holdingStream'>;
}) {
  const { repo, registry, engine, settings, log } = deps;
  const images = createTemplateImages({ repo, registry, engine, settings, log, inUse: deps.inUse });
  const { register, restore, buildOn, buildSlot, collect } = images;
  const live = new Map<string, Live>();
  /** Told when a public template's ready version changes or it is deleted (the warm pool follows). */
  const changed = new Set<() => void>();
  const tell = (t: TemplateRow) => {
    if (t.public) for (const f of changed) f();
  };
  const iso = () => new Date(deps.clock.now()).toISOString();
  const notFound = () => WorkspaceErrors.TEMPLATE_NOT_FOUND('no such template');

  function view(t: TemplateRow): TemplateView {
    return {
      id: t.id, name: t.name, owner: t.owner, public: t.public, builtIn: false, status: t.status as TemplateView['status'], reason: t.reason, version: t.version, buildId: t.buildId,
      startCommand: t.startCommand, readyCommand: t.readyCommand, user: t.user, workdir: t.workdir, env: JSON.parse(t.env) as Record<string, string>, cpu: t.cpu, memoryMb: t.memoryMb,
      createdAt: t.createdAt, updatedAt: t.updatedAt,
    };
  }

  function emit(buildId: string, e: BuildLogEntry) {
    for (const f of live.get(buildId)?.followers ?? []) f(e);
  }

  /** Runs one build to its end; never throws (its failure is the build's `failed` with the reason). */
  async function run(t: TemplateRow, b: TemplateBuildRow): Promise<void> {
    const state: Live = { lines: [], bytes: 0, followers: new Set(), cancel: new AbortController() };
    live.set(b.id, state);
    const onLine = (message: string) => {
      const line = { timestamp: iso(), message };
      state.lines.push(line);
      state.bytes += message.length;
      while (state.bytes > LOG_MAX_BYTES && state.lines.length > 1) state.bytes -= state.lines.shift()!.message.length;
      emit(b.id, { line });
    };
    let status: 'ready' | 'failed' = 'ready';
    let reason: string | null = null;
    let release = () => {};
    try {
      release = await buildSlot(onLine);
      state.cancel.signal.throwIfAborted();
      await buildOn(engine, t, b.image, onLine, state.cancel.signal);
      await register(t, b.version);
    } catch (e) {
      status = 'failed';
      reason = state.cancel.signal.aborted ? 'the template was deleted during its build' : (e as Error).message.slice(0, 2000) || 'the build failed';
      onLine(`keel: build failed: ${reason}`);
    } finally {
      release();
    }
    await repo.endBuild(b, status, reason, state.lines.map((l) => `${l.timestamp} ${l.message}`).join('\n'), iso()).catch((e) => log.error('template build not recorded', { build: b.id, ...errorFields(e) }));
    emit(b.id, { done: { status, ...(reason ? { reason } : {}) } });
    live.delete(b.id);
    if (status === 'ready') {
      tell(t);
      void collect();
    }
  }

  /** The caller's own template by id (admins: any); another's private one is 404. */
  async function owned(actor: Actor, id: string): Promise<TemplateRow> {
    const t = await repo.get(id);
    if (!t || !canAccess(actor, t.owner)) throw notFound();
    return t;
  }

  function newBuild(templateId: string, version: number): TemplateBuildRow {
    return { id: newId('bld', deps.clock), templateId, version, status: 'building', reason: null, log: '', image: imageRef(templateId, version), startedAt: iso(), endedAt: null };
  }

  /** A build of a template the caller may use (else 404). */
  async function ownedBuild(actor: Actor, id: string, buildId: string): Promise<TemplateBuildRow> {
    const t = await repo.get(id);
    if (!t || !(t.public || canAccess(actor, t.owner))) throw notFound();
    const b = await repo.build(buildId);
    if (!b || b.templateId !== id) throw WorkspaceErrors.BUILD_NOT_FOUND('no such build of this template');
    return b;
  }

  /**
   * A build's lines so far (the stored log once it ended), then, with `wait`, each new one as it is
   * written; last its end (`building` when not waiting for a build in flight). Check access first (ownedBuild).
   */
  async function* buildLines(buildId: string, signal: AbortSignal, wait: boolean): AsyncGenerator<BuildLogEntry> {
    const state = live.get(buildId);
    if (!state) {
      const ended = (await repo.build(buildId))!;
      for (const l of ended.log ? ended.log.split('\n') : []) {
        const space = l.indexOf(' ');
        yield { line: { timestamp: l.slice(0, space), message: l.slice(space + 1) } };
      }
      yield { done: { status: ended.status, ...(ended.reason ? { reason: ended.reason } : {}) } };
      return;
    }
    if (!wait) {
      for (const line of [...state.lines]) yield { line };
      yield { done: { status: 'building' } };
      return;
    }
    const queue: BuildLogEntry[] = state.lines.map((line) => ({ line }));
    let wake: (() => void) | undefined;
    const follower = (e: (typeof queue)[number]) => {
      queue.push(e);
      wake?.();
    };
    state.followers.add(follower);
    try {
      while (!signal.aborted) {
        const e = queue.shift();
        if (e) {
          yield e;
          if (e.done) return;
          continue;
        }
        await new Promise<void>((r) => {
          wake = r;
          signal.addEventListener('abort', () => r(), { once: true });
        });
        wake = undefined;
      }
    } finally {
      state.followers.delete(follower);
    }
  }

  return {
    /** Ready versions join the registry; a build a crash cut short runs again. */
    async start(): Promise<void> {
      const missing: { t: TemplateRow; version: number }[] = [];
      for (const t of await repo.everyTemplate()) {
        for (const b of await repo.builds(t.id)) {
          if (b.status !== 'ready') continue;
          // An engine that does not answer is not a missing image: registering fails and is logged.
          if (!(await engine.imageExists(b.image).catch(() => true))) missing.push({ t, version: b.version });
          else await register(t, b.version).catch((e) => log.warn('template not registered', { template: t.id, ...errorFields(e) }));
        }
      }
      // Images gone from the engine (pruned, an engine replaced): the versions someone gets are built again, in the background.
      if (missing.length) {
        const used = (await deps.inUse?.(missing.map((m) => key(m.t.id, m.version))).catch(() => undefined)) ?? new Set<string>();
        for (const m of missing) if ((!m.t.deletedAt && m.version === m.t.version) || used.has(key(m.t.id, m.version))) void restore(m.t, m.version);
      }
      for (const b of await repo.unfinished()) {
        const t = await repo.get(b.templateId);
        // Deleted before Keel stopped (its cancel not recorded): ended, not run again.
        if (!t || t.deletedAt) {
          await repo.endBuild(b, 'failed', 'the template was deleted during its build', '', iso());
          continue;
        }
        log.info('running again a template build Keel stopped during', { template: t.id, build: b.id });
        void run(t, b);
      }
    },

    /** `allowImage`: an image of Keel's own the Dockerfile may start from (a snapshot the caller owns, fromSnapshot). */
    async create(actor: Actor, input: CreateTemplateInput, allowImage?: string): Promise<{ id: string; name: string; status: 'building'; buildId: string; createdAt: string }> {
      if (!NAME.test(input.name)) throw WorkspaceErrors.INVALID_REQUEST('name must be 1-63 characters: lowercase letters, digits, . _ -', { property: '/name' });
      if (input.public && !actor.admin) throw WorkspaceErrors.FORBIDDEN('only admins make public templates');
      // The operator's bounds on what a template gives its workspaces (admins included: they are the host's).
      const { maxCpus, maxMemoryMb } = settings.templates;
      if (input.cpu !== undefined && input.cpu > maxCpus) throw WorkspaceErrors.INVALID_REQUEST(`cpu may be at most ${maxCpus} (APP_TEMPLATE_MAX_CPUS)`, { property: '/cpu', limit: maxCpus });
      if (input.memoryMb !== undefined && input.memoryMb > maxMemoryMb) throw WorkspaceErrors.INVALID_REQUEST(`memoryMb may be at most ${maxMemoryMb} (APP_TEMPLATE_MAX_MEMORY_MB)`, { property: '/memoryMb', limit: maxMemoryMb });
      // Checked now, so a bad Dockerfile or context is a 400, not a failed build.
      checkDockerfile(input.dockerfile, (b) => b);
      // Keel's images of other actors are not bases: only the caller's own (or public) template versions.
      for (const { line, image } of keelImages(input.dockerfile)) {
        if (image === allowImage) continue;
        const m = /^keel-template:(tpl_\w+)-v\d+$/i.exec(image);
        const t = m ? await repo.get(m[1]!) : undefined;
        if (t && !t.deletedAt && (t.public || canAccess(actor, t.owner))) continue;
        throw WorkspaceErrors.INVALID_REQUEST(`the Dockerfile's line ${line} is refused: it names an image of Keel's that is not yours (start from keel/minimal, keel/bun-typescript, a registry image, or one of your templates' keel-template:<id>-v<n>)`, { property: '/dockerfile', line });
      }
      contextFiles(input.files ?? {}, settings.templates.contextBytes);
      if (registry.isBuiltIn(input.name) || (await repo.byName(actor.id, input.name))) throw WorkspaceErrors.TEMPLATE_EXISTS('a template of this name exists', { property: '/name' });
      if (!actor.admin && (await repo.countOf(actor.id)) >= settings.templates.quota) {
        throw WorkspaceErrors.QUOTA_EXCEEDED(`you hold ${settings.templates.quota} templates (APP_QUOTA_TEMPLATES); delete one first`, { quota: 'templates', limit: settings.templates.quota });
      }
      const now = iso();
      const id = newId('tpl', deps.clock);
      const build = newBuild(id, 1);
      const row: TemplateRow = {
        id, owner: actor.id, name: input.name, public: input.public ?? false, dockerfile: input.dockerfile, files: JSON.stringify(input.files ?? {}),
        startCommand: input.startCommand ?? null, readyCommand: input.readyCommand ?? null, user: input.user ?? null, workdir: input.workdir ?? null,
        env: JSON.stringify(input.env ?? {}), cpu: input.cpu ?? null, memoryMb: input.memoryMb ?? null,
        status: 'building', reason: null, version: 0, buildId: build.id, createdAt: now, updatedAt: now, deletedAt: null,
      };
      try {
        await repo.create(row, build);
      } catch (e) {
        if (await repo.byName(actor.id, input.name)) throw WorkspaceErrors.TEMPLATE_EXISTS('a template of this name exists', { property: '/name' });
        throw e;
      }
      void run(row, build);
      return { id, name: row.name, status: 'building', buildId: build.id, createdAt: now };
    },

    /**
     * A template of a snapshot: its file system (its volume is not part of an image) as the base, run
     * as the workspace it was taken of ran. The code-server secret the commit kept in the image's
     * environment is blanked (each workspace gets its own).
     */
    fromSnapshot(actor: Actor, name: string, source: { image: string; template: Template | undefined }) {
      return this.create(
        actor,
        {
          name,
          dockerfile: `FROM ${source.image}\nENV KEEL_CODE_SECRET=\n`,
          ...(source.template ? { startCommand: source.template.command, user: source.template.user, workdir: source.template.workdir, env: source.template.env } : {}),
        },
        source.image,
      );
    },

    /** A new version from the same Dockerfile and context; running workspaces keep theirs. */
    async rebuild(actor: Actor, id: string): Promise<{ id: string; name: string; status: 'building'; buildId: string; createdAt: string }> {
      const t = await owned(actor, id);
      if (t.deletedAt) throw notFound();
      if (live.has(t.buildId)) throw WorkspaceErrors.TEMPLATE_BUILDING('a build of this template is running', { buildId: t.buildId });
      const last = (await repo.builds(id)).at(-1);
      const build = newBuild(id, (last?.version ?? 0) + 1);
      await repo.startBuild(id, build, iso());
      void run({ ...t, buildId: build.id }, build);
      return { id, name: t.name, status: 'building', buildId: build.id, createdAt: build.startedAt };
    },

    /** Own and public templates (admins: all), oldest first. */
    async list(actor: Actor): Promise<TemplateView[]> {
      const rows = actor.admin ? await repo.everyTemplate() : await repo.usable(actor.id);
      return rows.filter((t) => !t.deletedAt).map(view);
    },

    async get(actor: Actor, id: string): Promise<TemplateView> {
      const t = await repo.get(id);
      if (!t || t.deletedAt || !(t.public || canAccess(actor, t.owner))) throw notFound();
      return view(t);
    },

    /** Leaves the lists; its versions stay in the registry and on the engine for the workspaces made from them. */
    async remove(actor: Actor, id: string): Promise<{ id: string; deleted: true }> {
      const t = await owned(actor, id);
      if (t.deletedAt) throw notFound();
      await repo.markDeleted(id, iso());
      // A build of it in flight (or waiting for a slot) stops: nobody will get what it makes.
      live.get(t.buildId)?.cancel.abort();
      tell(t);
      void collect();
      return { id, deleted: true };
    },

    /** Removes the images of versions no one gets any more (after a workspace went, a rebuild, a delete). */
    collect,

    /** Calls `f` when a public template's ready version changes or it is deleted; the returned function stops. */
    onPublicChange(f: () => void): () => void {
      changed.add(f);
      return () => changed.delete(f);
    },

    /** The registry name of the public template called `name` at its ready version (APP_WARM_POOL), if any. */
    async publicVersion(name: string): Promise<string | undefined> {
      const t = await repo.publicByName(name);
      return t && t.version > 0 ? key(t.id, t.version) : undefined;
    },

    /**
     * The registry name a create's `template` means for `actor`: a built-in, the caller's template of
     * that name, or a public one; its ready version. Another's private template is 404, one with no
     * version yet 409.
     */
    async resolve(actor: Actor, name: string): Promise<string> {
      if (registry.get(name)) return name;
      const t = (await repo.byName(actor.id, name)) ?? (await repo.publicByName(name));
      if (!t || t.deletedAt) {
        // Another actor's private template is theirs (404); a name no one has is the spec's 400.
        if (await repo.existsNamed(name)) throw WorkspaceErrors.TEMPLATE_NOT_FOUND('no template of this name that you may use', { property: '/template' });
        throw WorkspaceErrors.INVALID_REQUEST('unknown template', { property: '/template', known: registry.names() });
      }
      if (t.version === 0) throw WorkspaceErrors.TEMPLATE_NOT_READY('the template has no built version yet', { property: '/template', status: t.status });
      // Its image is being built again (gone from the engine at start-up): not ready until it is back.
      if (!registry.get(key(t.id, t.version))) throw WorkspaceErrors.TEMPLATE_NOT_READY("the template's image is being made again; retry shortly", { property: '/template', status: 'building' });
      return key(t.id, t.version);
    },

    /**
     * A build's log for `actor` (404 first for a template or build it may not see): its lines so far,
     * then, with `wait`, each new one as it is written, holding one of the actor's stream slots until
     * `signal` aborts (429 first when none is left); last its end (`building` when not waiting).
     */
    buildLog(actor: Actor, id: string, buildId: string, signal: AbortSignal, wait: boolean): Promise<AsyncIterable<BuildLogEntry>> {
      const open = async () => {
        await ownedBuild(actor, id, buildId);
        return buildLines(buildId, signal, wait);
      };
      return wait ? deps.quotas.holdingStream(actor, signal, open) : open();
    },
  };
}

export type CustomTemplates = ReturnType<typeof createCustomTemplates>;
