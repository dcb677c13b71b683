// Templates people bring (a Dockerfile and its context) and their builds: each build is a version,
// its image tagged per version so a rebuild never changes what running workspaces use.
import { defineTables } from '../../../platform/db-schema';

export const templatesTables = defineTables(({ index, integer, real, table, text, uniqueIndex }) => {
  const templates = table(
    'workspaces_templates',
    {
      id: text('id').primaryKey(),
      owner: text('owner').notNull(),
      name: text('name').notNull(),
      public: integer('public', { mode: 'boolean' }).notNull(),
      dockerfile: text('dockerfile').notNull(),
      /** The build context: `{path: "text" | "base64:..."}` as posted, JSON. */
      files: text('files').notNull(),
      startCommand: text('start_command'),
      readyCommand: text('ready_command'),
      user: text('user'),
      workdir: text('workdir'),
      env: text('env').notNull(),
      cpu: real('cpu'),
      memoryMb: integer('memory_mb'),
      /** `building` (its latest build runs), `ready` (a version is built) or `failed` (the latest build failed and none is ready). */
      status: text('status').notNull(),
      reason: text('reason'),
      /** The version workspaces get (0: none yet). */
      version: integer('version').notNull(),
      buildId: text('build_id').notNull(),
      createdAt: text('created_at').notNull(),
      updatedAt: text('updated_at').notNull(),
      /** Deleted: out of every list, its name free (it becomes the id); its versions stay for the workspaces made from them. */
      deletedAt: text('deleted_at'),
    },
    (t) => [uniqueIndex('workspaces_templates_owner_name').on(t.owner, t.name)],
  );
  const builds = table(
    'workspaces_template_builds',
    {
      id: text('id').primaryKey(),
      templateId: text('template_id').notNull(),
      version: integer('version').notNull(),
      /** `building`, `ready` or `failed`. */
      status: text('status').notNull(),
      reason: text('reason'),
      /** The build's output, whole once it ended (bounded): followers read it, then the live lines. */
      log: text('log').notNull(),
      image: text('image').notNull(),
      startedAt: text('started_at').notNull(),
      endedAt: text('ended_at'),
    },
    (t) => [index('workspaces_template_builds_template').on(t.templateId, t.version)],
  );
  return { templates, builds };
});

export const { templates: workspaceTemplates, builds: workspaceTemplateBuilds } = templatesTables('sqlite');
export type TemplateRow = typeof workspaceTemplates.$inferSelect;
export type TemplateBuildRow = typeof workspaceTemplateBuilds.$inferSelect;
