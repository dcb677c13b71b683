// The low-level typed client: one openapi-fetch client per service, typed by the schema files
// generated from the services' OpenAPI documents (src/generated/, `npm run client:generate`), a
// Bearer token on every request. The ergonomic layer (Keel, workspaces, agent sessions) is keel.ts.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components as CatalogComponents, paths as CatalogPaths } from './generated/catalog.js';
import type { components as IdentityComponents, paths as IdentityPaths } from './generated/identity.js';
import type { components as PlaybackComponents, paths as PlaybackPaths } from './generated/playback.js';
import type { paths as SourcesPaths } from './generated/sources.js';
import type { paths as WorkersPaths } from './generated/workers.js';
import type { components as WorkspacesComponents, paths as WorkspacesPaths } from './generated/workspaces.js';

export type { CatalogPaths, IdentityPaths, PlaybackPaths, SourcesPaths, WorkersPaths, WorkspacesPaths };

type WorkspaceSchemas = WorkspacesComponents['schemas'];
/** A workspace as the API answers it (the SDK's Workspace class has these fields and its methods). */
export type WorkspaceData = WorkspaceSchemas['Workspace'];
export type WorkspaceWithStats = WorkspaceSchemas['WorkspaceWithStats'];
export type CreatedWorkspace = WorkspaceSchemas['CreatedWorkspace'];
export type WorkspaceList = WorkspaceSchemas['WorkspaceList'];
export type StreamStats = WorkspaceSchemas['StreamStats'];
export type WorkspaceStatus = WorkspaceData['status'];
export type CreateWorkspaceBody = WorkspaceSchemas['CreateWorkspaceBody'];
export type ExecBody = WorkspaceSchemas['ExecBody'];
export type ExecResult = WorkspaceSchemas['ExecResult'];
export type LogEntry = WorkspaceSchemas['LogEntry'];
export type QuotaView = WorkspaceSchemas['QuotaView'];
export type AgentSession = WorkspaceSchemas['Session'];
export type AgentSessionListEntry = WorkspaceSchemas['SessionListEntry'];
export type AgentMessage = WorkspaceSchemas['Message'];
export type AgentToolCall = WorkspaceSchemas['ToolCall'];
export type AssistantReply = WorkspaceSchemas['AssistantReply'];
export type Webhook = WorkspaceSchemas['Webhook'];
export type TemplateList = WorkspaceSchemas['TemplateList'];
export type TemplateInfo = WorkspaceSchemas['TemplateInfo'];
export type KeptVolume = WorkspaceSchemas['KeptVolume'];
export type ErrorEnvelope = WorkspaceSchemas['ErrorEnvelope'];
/** The events of the streams, one member per `event:` name. */
export type AgentStreamEvent = WorkspaceSchemas['AgentEvent'];
export type ExecEvent = WorkspaceSchemas['ExecEvent'];
export type LogEvent = WorkspaceSchemas['LogEvent'];
export type WorkspaceStreamEvent = WorkspaceSchemas['WorkspaceStreamEvent'];
export type Work = CatalogComponents['schemas']['Work'];
export type Problem = CatalogComponents['schemas']['Problem'];
export type Actor = IdentityComponents['schemas']['Actor'];
export type TokenPair = IdentityComponents['schemas']['TokenPair'];
export type ActorWithKey = IdentityComponents['schemas']['ActorWithKey'];
export type PlaybackSession = PlaybackComponents['schemas']['PlaybackSession'];

export type KeelService = 'workspaces' | 'catalog' | 'identity' | 'sources' | 'workers' | 'playback';

/** Where each service listens by default (`npm run dev`: 127.0.0.1:3100-3104 and 3106). */
export const DEFAULT_PORTS: Record<KeelService, number> = { workspaces: 3100, catalog: 3101, sources: 3102, workers: 3103, identity: 3104, playback: 3106 };

export interface KeelClientOptions {
  /** Scheme and host every service is reached on, with its default port: `http://127.0.0.1`. */
  host?: string;
  /** A base URL per service, over `host` and the default ports (e.g. behind a proxy). */
  urls?: Partial<Record<KeelService, string>>;
  /** The Bearer token: a workspace-API JWT, or a media access token; a function is asked on each request. */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof fetch;
}

export interface KeelClient {
  workspaces: Client<WorkspacesPaths>;
  catalog: Client<CatalogPaths>;
  identity: Client<IdentityPaths>;
  sources: Client<SourcesPaths>;
  workers: Client<WorkersPaths>;
  playback: Client<PlaybackPaths>;
}

/** One typed client per service, each sending the token. */
export function createKeelClient(opts: KeelClientOptions = {}): KeelClient {
  const host = (opts.host ?? 'http://127.0.0.1').replace(/\/+$/, '');
  const urlOf = (s: KeelService) => opts.urls?.[s] ?? `${host}:${DEFAULT_PORTS[s]}`;
  const auth: Middleware = {
    async onRequest({ request }) {
      const token = typeof opts.token === 'function' ? await opts.token() : opts.token;
      if (token && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
      return request;
    },
  };
  const make = <P extends {}>(s: KeelService): Client<P> => {
    const client = createClient<P>({ baseUrl: urlOf(s), ...(opts.fetch ? { fetch: opts.fetch } : {}) });
    client.use(auth);
    return client;
  };
  return {
    workspaces: make<WorkspacesPaths>('workspaces'),
    catalog: make<CatalogPaths>('catalog'),
    identity: make<IdentityPaths>('identity'),
    sources: make<SourcesPaths>('sources'),
    workers: make<WorkersPaths>('workers'),
    playback: make<PlaybackPaths>('playback'),
  };
}
