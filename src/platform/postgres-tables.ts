// Every service's tables built for PostgreSQL: drizzle-kit's schema for drizzle/postgres
// (drizzle.postgres.config.ts). Each service defines its tables once, in its *.tables.ts.
import { catalogTables } from '../services/catalog/catalog.tables';
import { libraryTables } from '../services/catalog/library/library.tables';
import { identityTables } from '../services/identity/identity.tables';
import { playbackTables } from '../services/playback/playback.tables';
import { progressTables } from '../services/playback/progress/progress.tables';
import { sourcesTables } from '../services/sources/sources.tables';
import { workersTables } from '../services/workers/workers.tables';
import { agentTables } from '../services/workspaces/agent/agent.tables';
import { previewsTables } from '../services/workspaces/previews/previews.tables';
import { processesTables } from '../services/workspaces/processes/processes.tables';
import { templatesTables } from '../services/workspaces/templates/templates.tables';
import { usageTables } from '../services/workspaces/usage/usage.tables';
import { webhooksTables } from '../services/workspaces/webhooks/webhooks.tables';
import { workspacesTables } from '../services/workspaces/workspaces.tables';

export const { catalogWorks, catalogEditions, catalogAssets, catalogMediaIndexes, catalogRelations, catalogEventOutbox } = catalogTables('postgres');
export const { libraryFiles, libraryScans } = libraryTables('postgres');
export const { actors, sessions, refreshTokens } = identityTables('postgres');
export const { playbackSessions } = playbackTables('postgres');
export const { playbackProgress } = progressTables('postgres');
export const { sourcesBindings } = sourcesTables('postgres');
export const { workersJobs } = workersTables('postgres');
export const { agentSessions, agentMessages, agentEvents, agentUsage, agentApprovals } = agentTables('postgres');
export const { workspacePreviews, workspaceActivity } = previewsTables('postgres');
export const { workspaceProcesses } = processesTables('postgres');
export const { usageExec, usageRunning } = usageTables('postgres');
export const { registrations, deliveries, attempts, eventInbox } = webhooksTables('postgres');
export const { workspaces, snapshots, retainedVolumes, workspaceEventOutbox } = workspacesTables('postgres');
export const { templates: workspaceTemplates, builds: workspaceTemplateBuilds } = templatesTables('postgres');
