// The typed Keel client: one openapi-fetch client per service, typed by the schema files generated
// from the services' OpenAPI documents (src/generated/, `npm run client:generate`), a Bearer token
// on every request, and a reader that turns a text/event-stream answer into typed events.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components as CatalogComponents, paths as CatalogPaths } from './generated/catalog';
import type { components as IdentityComponents, paths as IdentityPaths } from './generated/identity';
import type { components as PlaybackComponents, paths as PlaybackPaths } from './generated/playback';
import type { paths as SourcesPaths } from './generated/sources';
import type { paths as WorkersPaths } from './generated/workers';
import type { components as WorkspacesComponents, paths as WorkspacesPaths } from './generated/workspaces';

export type { CatalogPaths, IdentityPaths, PlaybackPaths, SourcesPaths, WorkersPaths, WorkspacesPaths };

type WorkspaceSchemas = WorkspacesComponents['schemas'];
export type Workspace = WorkspaceSchemas['Workspace'];
export type WorkspaceWithStats = WorkspaceSchemas['WorkspaceWithStats'];
export type CreatedWorkspace = WorkspaceSchemas['CreatedWorkspace'];
export type WorkspaceList = WorkspaceSchemas['WorkspaceList'];
export type StreamStats = WorkspaceSchemas['StreamStats'];
export type WorkspaceStatus = Workspace['status'];
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
export type AgentEvent = WorkspaceSchemas['AgentEvent'];
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

/** One Server-Sent Event as sent: its `event:` name (`message` when none), `id:` and JSON `data:`. */
interface RawEvent {
  event: string;
  id?: string;
  data: unknown;
}

/**
 * The events of a text/event-stream answer, as the stream's event type (AgentEvent, ExecEvent,
 * LogEvent, WorkspaceStreamEvent): comments (`: keep-alive`) are skipped, `data:` lines are joined
 * and parsed as JSON. Ends when the server ends the stream; abort the request to leave earlier.
 */
export async function* readEvents<E extends { event: string; data: unknown }>(response: Response): AsyncGenerator<E> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer[end] === '\r' ? 4 : 2));
      const parsed = parseBlock(block);
      if (parsed) yield parsed as unknown as E;
    }
  }
}

function parseBlock(block: string): RawEvent | undefined {
  let event = 'message';
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  const text = data.join('\n');
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: the text as sent.
  }
  return { event, ...(id !== undefined ? { id } : {}), data: parsed };
}
