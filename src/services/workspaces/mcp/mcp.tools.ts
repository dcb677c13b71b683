// Keel's workspace operations as MCP tools: the same services, ownership and quotas as the HTTP
// routes, for the actor of the request's Bearer token. Inputs are the HTTP bodies' TypeBox schemas
// (the JSON Schema an MCP client sees, checked before anything runs); a refusal is a tool result
// with `isError` and the HTTP API's error envelope, never a protocol error.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { isAppError, toEnvelope } from '../../../platform/errors';
import type { Actor } from '../../../platform/auth/workspace-token';
import { ExecBody } from '../exec/exec.model';
import type { ExecService } from '../exec/exec.service';
import { CreateWorkspaceBody } from '../lifecycle/lifecycle.model';
import type { Lifecycle } from '../lifecycle/lifecycle.service';
import type { FilesService } from '../files/files.service';
import type { ProcessesService } from '../processes/processes.service';
import { PreviewBody } from '../previews/previews.model';
import type { PreviewsService } from '../previews/previews.service';
import type { TemplatesService } from '../images/templates.service';
import { computerTools, ListDirectoryInput, ProcessRef, ReadFileInput, SignalInput, StartProcessInput, WriteFileInput } from './mcp.computer';
import { WorkspaceErrors } from '../workspaces.errors';

export interface McpToolDeps {
  workspaces: Lifecycle;
  exec: ExecService;
  files: FilesService;
  processes: ProcessesService;
  previews: PreviewsService;
  /** GET /api/templates: built-ins, the caller's and public ones. */
  templates?: TemplatesService;
}

const Id = Type.String({ minLength: 1, maxLength: 128, description: 'workspace id (`ws_...`)' });
const WorkspaceRef = Type.Object({ id: Id }, { additionalProperties: false });
const ListInput = Type.Object(
  { status: Type.Optional(Type.String({ enum: ['creating', 'starting', 'running', 'stopping', 'stopped', 'restarting', 'failed', 'paused'], description: 'only workspaces in this status' })) },
  { additionalProperties: false },
);
const StopInput = Type.Object({ id: Id, force: Type.Optional(Type.Boolean({ description: 'kill at once instead of a graceful stop' })) }, { additionalProperties: false });
const DeleteInput = Type.Object({ id: Id, volumes: Type.Optional(Type.Boolean({ description: 'remove the volume too' })) }, { additionalProperties: false });
const propsOf = (s: unknown) => (s as { properties: Record<string, TSchema> }).properties;
const ExecInput = Type.Object({ id: Id, ...propsOf(ExecBody) }, { additionalProperties: false });
const PreviewInput = Type.Object({ id: Id, ...propsOf(PreviewBody) }, { additionalProperties: false });
const PreviewRef = Type.Object({ id: Id, previewId: Type.String({ minLength: 1, maxLength: 64, description: 'preview id (`pv_...`) from create_preview' }) }, { additionalProperties: false });
// Unknown fields are refused rather than dropped: a misspelt option must not create something else.
const CreateInput = Type.Object(propsOf(CreateWorkspaceBody), { additionalProperties: false });

interface McpTool<S extends TSchema = TSchema> {
  description: string;
  input: S;
  run(actor: Actor, input: Static<S>): Promise<unknown> | unknown;
}
const define = <S extends TSchema>(t: McpTool<S>): McpTool => t as unknown as McpTool;

export function mcpTools(deps: McpToolDeps): Record<string, McpTool> {
  const ws = deps.workspaces;
  const c = computerTools(deps);
  return {
    list_workspaces: define({ description: 'List your workspaces (admins: all), oldest first', input: ListInput, run: async (a, i) => ({ workspaces: await ws.list(a, i as never) }) }),
    list_templates: define({
      description: 'List the templates a workspace can be created from: built-ins, yours and public ones (name, status, builtIn, public, owner)',
      input: Type.Object({}, { additionalProperties: false }),
      run: async (a) => (deps.templates ? deps.templates.list(a) : { templates: [], default: 'bun-typescript' }),
    }),
    create_workspace: define({
      description: 'Create a workspace from a template (`minimal`, `bun-typescript`, or one of yours or a public one: see list_templates); it starts by itself. Poll get via list_workspaces until running.',
      input: CreateInput,
      run: (a, i) => ws.create(a, i as never),
    }),
    start_workspace: define({ description: 'Start a stopped (or failed) workspace', input: WorkspaceRef, run: (a, i) => ws.start(a, i.id) }),
    stop_workspace: define({ description: 'Stop a running workspace', input: StopInput, run: (a, i) => ws.stop(a, i.id, i.force ?? false) }),
    delete_workspace: define({ description: 'Delete a workspace (its volume too with `volumes: true`)', input: DeleteInput, run: (a, i) => ws.remove(a, i.id, i.volumes ?? false) }),
    exec: define({
      description: 'Run a shell command (`sh -c`) in a running workspace and answer {exitCode, stdout, stderr, duration, timedOut}',
      input: ExecInput,
      run(a, i) {
        // The exec service takes one of the actor's exec slots for as long as the command runs.
        const { id, ...body } = i as { id: string } & Static<typeof ExecBody>;
        return deps.exec.run(a, id, { ...body, timeout: body.timeout ?? Value.Default(ExecBody.properties.timeout, undefined) } as never);
      },
    }),
    read_file: define({
      description:
        'Read a file of a running workspace: {path, size, encoding, content, truncated}. `encoding` is `utf-8` when the bytes are UTF-8 text, else `base64`; ' +
        `at most the first ${deps.files.readMaxBytes} bytes are answered (\`truncated: true\` past them), of any file; a read that yields nothing for 10 s ` +
        '(a FIFO) ends with `idle: true`. A directory answers its entries, as list_directory.',
      input: ReadFileInput,
      run: (a, i) => c.readFile(a, i),
    }),
    write_file: define({
      description: 'Create or replace a file of a running workspace with `content` (UTF-8 text, or base64 with `encoding: "base64"`); parents are made. Answers {path, size}.',
      input: WriteFileInput,
      run: (a, i) => c.writeFile(a, i),
    }),
    list_directory: define({
      description:
        'List a directory of a running workspace (default `/workspace`): {path, type, entries: [{name, type, size, mode, modifiedAt}]} sorted by name; ' +
        'a listing past 2 MiB is the error OUTPUT_TOO_LARGE',
      input: ListDirectoryInput,
      run: (a, i) => c.listDirectory(a, i),
    }),
    start_process: define({
      description: 'Start a command (`sh -c`) that keeps running after the call (a server, a watcher, a long build); answers {id, status}. Read it with get_process, stop it with signal_process.',
      input: StartProcessInput,
      run: (a, i) => c.startProcess(a, i),
    }),
    get_process: define({
      description: 'A process started by start_process: {status (running, exited or lost), exitCode, output: {stdout, stderr}} with the output kept so far',
      input: ProcessRef,
      run: (a, i) => c.getProcess(a, i),
    }),
    signal_process: define({
      description: 'Send TERM, KILL, INT or HUP to a running process and what it started',
      input: SignalInput,
      run: (a, i) => c.signalProcess(a, i as never),
    }),
    create_preview: define({
      description:
        "A link to a port of a running workspace (a dev server started with start_process): {id, port, url, expiresAt}. `url` is a host of its own " +
        '(`http://<label>.localhost:3105/` by default) that needs no header, for HTTP and WebSocket, until `ttlSeconds` (default 3600) pass or revoke_preview; share it as a secret.',
      input: PreviewInput,
      run: (a, i) => {
        const { id, ...body } = i as { id: string } & Static<typeof PreviewBody>;
        return deps.previews.create(a, id, body);
      },
    }),
    list_previews: define({
      description: "The workspace's preview links, newest first: {previews: [{id, port, url, expiresAt, revoked?}]}",
      input: WorkspaceRef,
      run: async (a, i) => ({ previews: await deps.previews.list(a, i.id) }),
    }),
    revoke_preview: define({
      description: 'Revoke a preview link at once (it answers 410 from the next request; its WebSockets are closed): {id, revoked: true}',
      input: PreviewRef,
      run: (a, i) => deps.previews.revoke(a, i.id, i.previewId),
    }),
  };
}

/** The tools as MCP lists them. */
export function toolList(tools: Record<string, McpTool>) {
  return Object.entries(tools).map(([name, t]) => ({ name, description: t.description, inputSchema: JSON.parse(JSON.stringify(t.input)) }));
}

export type ToolResult = { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

const text = (value: unknown, isError = false): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }], ...(isError ? { isError } : {}) });

/** Checks the input, runs the tool for `actor`; errors become results with the HTTP error envelope. */
export async function callTool(tools: Record<string, McpTool>, actor: Actor, name: string, args: unknown): Promise<ToolResult> {
  const tool = tools[name];
  if (!tool) return text(toEnvelope(WorkspaceErrors.INVALID_REQUEST('no such tool', { tools: Object.keys(tools) })), true);
  const input = Value.Default(tool.input, structuredClone(args ?? {}));
  if (!Value.Check(tool.input, input)) {
    const e = Value.Errors(tool.input, input).First();
    return text(toEnvelope(WorkspaceErrors.INVALID_REQUEST(`invalid input at ${e?.path || '/'}: ${e?.message ?? 'invalid'}`, { field: e?.path ?? '/' })), true);
  }
  try {
    return text(await tool.run(actor, input));
  } catch (err) {
    if (isAppError(err)) return text(toEnvelope(err), true);
    throw err;
  }
}
