// Every query of the templates feature: templates (per owner, public ones), their builds, and which
// versions workspace rows still name (the workspaces table, read only).
import { and, asc, count, eq, inArray, isNotNull, isNull, ne, or } from 'drizzle-orm';
import type { Store } from '../../../platform/store';
import { templatesTables, type TemplateBuildRow, type TemplateRow } from './templates.tables';
import { workspacesTables } from '../workspaces.tables';

export function createTemplatesRepository(store: Store) {
  const db = store.orm;
  const { templates, builds } = templatesTables(store.dialect);
  const { workspaces } = workspacesTables(store.dialect);
  return {
    /** Which of these versions (registry names) a workspace row still names. */
    async versionsInUse(names: string[]): Promise<Set<string>> {
      if (!names.length) return new Set();
      return new Set((await db.selectDistinct({ t: workspaces.template }).from(workspaces).where(inArray(workspaces.template, names))).map((r) => r.t));
    },
    /** The caller's templates and the public ones, oldest first. */
    usable: (owner: string): Promise<TemplateRow[]> => db.select().from(templates).where(and(or(eq(templates.owner, owner), eq(templates.public, true)), isNull(templates.deletedAt))).orderBy(asc(templates.createdAt)),
    everyTemplate: (): Promise<TemplateRow[]> => db.select().from(templates).orderBy(asc(templates.createdAt)),
    get: async (id: string): Promise<TemplateRow | undefined> => (await db.select().from(templates).where(eq(templates.id, id)))[0],
    byName: async (owner: string, name: string): Promise<TemplateRow | undefined> => (await db.select().from(templates).where(and(eq(templates.owner, owner), eq(templates.name, name))))[0],
    publicByName: async (name: string): Promise<TemplateRow | undefined> => (await db.select().from(templates).where(and(eq(templates.public, true), eq(templates.name, name), isNull(templates.deletedAt))).orderBy(asc(templates.createdAt)))[0],
    existsNamed: async (name: string): Promise<boolean> => (await db.select({ id: templates.id }).from(templates).where(and(eq(templates.name, name), isNull(templates.deletedAt))).limit(1)).length > 0,
    countOf: async (owner: string): Promise<number> => Number((await db.select({ n: count() }).from(templates).where(and(eq(templates.owner, owner), isNull(templates.deletedAt))))[0]?.n ?? 0),
    /** A template and its first build, together. */
    create: (t: TemplateRow, b: TemplateBuildRow) =>
      store.transaction(async (tx) => {
        await tx.insert(templates).values(t);
        await tx.insert(builds).values(b);
      }),
    /** A new version's build, and the template pointing at it. */
    startBuild: (templateId: string, b: TemplateBuildRow, at: string) =>
      store.transaction(async (tx) => {
        await tx.insert(builds).values(b);
        await tx.update(templates).set({ buildId: b.id, updatedAt: at, status: 'building', reason: null }).where(eq(templates.id, templateId));
      }),
    /** A build's end; the template is ready at this version, or failed when no version is ready. */
    endBuild: (b: TemplateBuildRow, status: 'ready' | 'failed', reason: string | null, log: string, at: string) =>
      store.transaction(async (tx) => {
        await tx.update(builds).set({ status, reason, log, endedAt: at }).where(eq(builds.id, b.id));
        const t = (await tx.select().from(templates).where(eq(templates.id, b.templateId)))[0];
        if (!t || t.buildId !== b.id) return;
        if (status === 'ready') await tx.update(templates).set({ status: 'ready', reason: null, version: b.version, updatedAt: at }).where(eq(templates.id, t.id));
        else await tx.update(templates).set({ status: t.version > 0 ? 'ready' : 'failed', reason, updatedAt: at }).where(eq(templates.id, t.id));
      }),
    markDeleted: async (id: string, at: string) => {
      await db.update(templates).set({ deletedAt: at, name: id, updatedAt: at }).where(eq(templates.id, id));
    },
    build: async (id: string): Promise<TemplateBuildRow | undefined> => (await db.select().from(builds).where(eq(builds.id, id)))[0],
    builds: (templateId: string): Promise<TemplateBuildRow[]> => db.select().from(builds).where(eq(builds.templateId, templateId)).orderBy(asc(builds.version)),
    /** Built versions no one gets by name any more: not their template's current version, or of a deleted template. */
    replaced: (): Promise<{ templateId: string; version: number; image: string }[]> =>
      db
        .select({ templateId: builds.templateId, version: builds.version, image: builds.image })
        .from(builds)
        .innerJoin(templates, eq(templates.id, builds.templateId))
        .where(and(eq(builds.status, 'ready'), or(isNotNull(templates.deletedAt), ne(builds.version, templates.version)))),
    unfinished: (): Promise<TemplateBuildRow[]> => db.select().from(builds).where(eq(builds.status, 'building')),
  };
}

export type TemplatesRepository = ReturnType<typeof createTemplatesRepository>;
