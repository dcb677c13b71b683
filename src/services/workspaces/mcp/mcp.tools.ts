// Keel's workspace operations as MCP tools: the same services, ownership and quotas as the HTTP
// routes, for the actor of the request's Bearer token. Inputs are the HTTP bodies' TypeBox schemas
// (the JSON Schema an MCP client sees, checked before anything runs); a refusal is a tool result
// with `isError` and the HTTP API's error envelope, never a protocol error.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { AppError, isAppError, toEnvelope } from '../../../platform/errors';
import type { Actor } from '../../../platform/auth/workspace-token';
import { ExecBody } from '../exec/exec.model';
import type { ExecService } from '../exec/exec.service';
import { CreateWorkspaceBody } from '../lifecycle/lifecycle.model';
import type { Lifecycle } from '../lifecycle/lifecycle.service';
import type { Quotas } from '../quotas';

export interface McpToolDeps {
  workspaces: Lifecycle;
  exec: ExecService;
  quotas: Quotas;
}

const Id = Type.String({ minLength: 1, maxLength: 128, description: 'workspace id (`ws_...`)' });
const WorkspaceRef = Type.Object({ id: Id }, { additionalProperties: false });
const ListInput = Type.Object(
  { status: Type.Optional(Type.String({ enum: ['creating', 'starting', 'running', 'stopping', 'stopped', 'restarting', 'failed'], description: 'only workspaces in this status' })) },
  { additionalProperties: false },
);
const StopInput = Type.Object({ id: Id, force: Type.Optional(Type.Boolean({ description: 'kill at once instead of a graceful stop' })) }, { additionalProperties: false });
const DeleteInput = Type.Object({ id: Id, volumes: Type.Optional(Type.Boolean({ description: 'remove the volume too' })) }, { additionalProperties: false });
const propsOf = (s: unknown) => (s as { properties: Record<string, TSchema> }).properties;
const ExecInput = Type.Object({ id: Id, ...propsOf(ExecBody) }, { additionalProperties: false });
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
  return {
    list_workspaces: define({ description: 'List your workspaces (admins: all), oldest first', input: ListInput, run: (a, i) => ({ workspaces: ws.list(a, i as never) }) }),
    create_workspace: define({
      description: 'Create a workspace from a template (`minimal`, `bun-typescript`, ...); it starts by itself. Poll get via list_workspaces until running.',
      input: CreateInput,
      run: (a, i) => ws.create(a, i as never),
    }),
    start_workspace: define({ description: 'Start a stopped (or failed) workspace', input: WorkspaceRef, run: (a, i) => ws.start(a, i.id) }),
    stop_workspace: define({ description: 'Stop a running workspace', input: StopInput, run: (a, i) => ws.stop(a, i.id, i.force ?? false) }),
    delete_workspace: define({ description: 'Delete a workspace (its volume too with `volumes: true`)', input: DeleteInput, run: (a, i) => ws.remove(a, i.id, i.volumes ?? false) }),
    exec: define({
      description: 'Run a shell command (`sh -c`) in a running workspace and answer {exitCode, stdout, stderr, duration, timedOut}',
      input: ExecInput,
      async run(a, i) {
        // One of the actor's exec slots for as long as the command runs, as POST .../exec takes.
        const slot = deps.quotas.take(a, 'execs');
        try {
          const { id, ...body } = i as { id: string } & Static<typeof ExecBody>;
          return await deps.exec.run(a, id, { ...body, timeout: body.timeout ?? Value.Default(ExecBody.properties.timeout, undefined) } as never);
        } finally {
          slot.release();
        }
      },
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
  if (!tool) return text(toEnvelope(new AppError('INVALID_REQUEST', 'no such tool', { tools: Object.keys(tools) })), true);
  const input = Value.Default(tool.input, structuredClone(args ?? {}));
  if (!Value.Check(tool.input, input)) {
    const e = Value.Errors(tool.input, input).First();
    return text(toEnvelope(new AppError('INVALID_REQUEST', `invalid input at ${e?.path || '/'}: ${e?.message ?? 'invalid'}`, { field: e?.path ?? '/' })), true);
  }
  try {
    return text(await tool.run(actor, input));
  } catch (err) {
    if (isAppError(err)) return text(toEnvelope(err), true);
    throw err;
  }
}
