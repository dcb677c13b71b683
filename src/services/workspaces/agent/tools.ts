// The tools the model may call, each scoped to the session's workspace. They act inside the
// workspace's container through the exec service (its timeout, output caps and process-group kill),
// so every path is a path of the workspace's own file system, never the Keel host's. A tool never
// throws: a stopped or missing workspace, a bad path or a failing command is a result the model reads.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { jsonSchema, tool, type ToolSet } from 'ai';
import { AppError } from '../../../platform/errors';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { ExecInput, ExecResult } from '../exec/exec.model';
import { EXEC_TIMEOUT_DEFAULT_MS, EXEC_TIMEOUT_MAX_MS } from '../exec/exec.model';

/** What the tools need of the exec feature: run one command to its end (the exec service's `run`). */
export interface WorkspaceShell {
  run(actor: Actor, workspaceId: string, input: ExecInput, signal?: AbortSignal): Promise<ExecResult>;
}

/**
 * Takes one of the actor's exec slots (APP_QUOTA_EXECS) for one command, as POST .../exec does; throws
 * 429 QUOTA_EXCEEDED when none is left, which the tool hands to the model as its result.
 */
export type TakeExecSlot = (actor: Actor) => { release(): void };

/** Characters of each output stream, or of a file, handed back to the model. */
export const TOOL_OUTPUT_MAX_CHARS = 16_384;
export const READ_FILE_MAX_CHARS = 65_536;
export const WRITE_FILE_MAX_CHARS = 262_144;
/** One environment string stays far below Linux's 128 KiB per-string limit (4 bytes per char at worst). */
const WRITE_CHUNK_CHARS = 16_384;

const Path = (description: string) => Type.String({ minLength: 1, maxLength: 4096, pattern: '^[^\\u0000]+$', description });

export const RunCommandInput = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 65_536, description: 'shell command line, run by `sh -c`' }),
    workdir: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: '^/[^\\u0000]*$', description: 'absolute directory (default: the workspace directory)' })),
    timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: EXEC_TIMEOUT_MAX_MS, description: `milliseconds (default ${EXEC_TIMEOUT_DEFAULT_MS})` })),
  },
  { additionalProperties: false },
);
const ReadFileInput = Type.Object({ path: Path('file path; relative paths start at the workspace directory') }, { additionalProperties: false });
const WriteFileInput = Type.Object(
  {
    path: Path('file path; relative paths start at the workspace directory; missing directories are created'),
    content: Type.String({ maxLength: WRITE_FILE_MAX_CHARS, description: 'the whole new content (UTF-8 text)' }),
  },
  { additionalProperties: false },
);
const ListDirectoryInput = Type.Object({ path: Type.Optional(Path('directory (default: the workspace directory)')) }, { additionalProperties: false });

/** A TypeBox schema as the AI SDK wants it: the JSON Schema the model sees, checked by TypeBox. */
function schema<T extends TSchema>(s: T) {
  return jsonSchema<Static<T>>(JSON.parse(JSON.stringify(s)), {
    validate: (value) => (Value.Check(s, value) ? { success: true, value: value as Static<T> } : { success: false, error: new Error(firstError(s, value)) }),
  });
}
function firstError(s: TSchema, value: unknown): string {
  const e = Value.Errors(s, value).First();
  return e ? `invalid input at ${e.path || '/'}: ${e.message}` : 'invalid input';
}

// Built once: every turn hands the same schemas to the SDK.
const runCommandSchema = schema(RunCommandInput);
const readFileSchema = schema(ReadFileInput);
const writeFileSchema = schema(WriteFileInput);
const listDirectorySchema = schema(ListDirectoryInput);

/** A single-quoted shell word. */
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

function cut(text: string, max: number): { text: string; truncated: boolean } {
  return text.length > max ? { text: text.slice(0, max), truncated: true } : { text, truncated: false };
}

/** Splits without cutting a surrogate pair in two. */
function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(i + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out.length ? out : [''];
}

/** A workspace or engine refusal as the model reads it. */
function refusal(e: unknown): { error: string; code?: string } {
  if (e instanceof AppError) return { error: e.message, code: e.code };
  return { error: e instanceof Error ? e.message : String(e) };
}

/** The tool set of one turn: `actor` is the caller of the turn, `workspaceId` the session's workspace. */
export function workspaceTools(shell: WorkspaceShell, takeExecSlot: TakeExecSlot, actor: Actor, workspaceId: string): ToolSet {
  // Every command a tool runs holds an exec slot until it is gone, so turns cannot run more commands
  // at once than the actor's exec calls could.
  const run = async (input: ExecInput, signal?: AbortSignal) => {
    const slot = takeExecSlot(actor);
    try {
      return await shell.run(actor, workspaceId, input, signal);
    } finally {
      slot.release();
    }
  };

  /** Runs a helper command; its failure (non-zero exit) becomes `{error}` from its stderr. */
  const helper = async (command: string, signal: AbortSignal | undefined, env?: Record<string, string>) => {
    const r = await run({ command, env, timeout: EXEC_TIMEOUT_DEFAULT_MS }, signal);
    if (r.exitCode !== 0) return { ok: false as const, error: r.stderr.trim().slice(0, 2000) || `exit code ${r.exitCode}`, r };
    return { ok: true as const, r };
  };

  return {
    run_command: tool({
      description:
        'Run a shell command in the workspace (a Linux container) and get its exit code, stdout and stderr. ' +
        `Output beyond ${TOOL_OUTPUT_MAX_CHARS} characters per stream is cut. A command that outlives its timeout is killed (exitCode 124).`,
      inputSchema: runCommandSchema,
      execute: async (input, { abortSignal }) => {
        try {
          const r = await run({ command: input.command, workdir: input.workdir, timeout: input.timeout }, abortSignal);
          const stdout = cut(r.stdout, TOOL_OUTPUT_MAX_CHARS);
          const stderr = cut(r.stderr, TOOL_OUTPUT_MAX_CHARS);
          return {
            exitCode: r.exitCode,
            stdout: stdout.text,
            stderr: stderr.text,
            timedOut: r.timedOut,
            ...(stdout.truncated || r.stdoutTruncated ? { stdoutTruncated: true } : {}),
            ...(stderr.truncated || r.stderrTruncated ? { stderrTruncated: true } : {}),
          };
        } catch (e) {
          return refusal(e);
        }
      },
    }),

    read_file: tool({
      description: `Read a text file of the workspace (at most ${READ_FILE_MAX_CHARS} characters are returned).`,
      inputSchema: readFileSchema,
      execute: async ({ path }, { abortSignal }) => {
        try {
          const h = await helper(`cat -- ${quote(path)}`, abortSignal);
          if (!h.ok) return { path, error: h.error };
          const c = cut(h.r.stdout, READ_FILE_MAX_CHARS);
          return { path, content: c.text, ...(c.truncated || h.r.stdoutTruncated ? { truncated: true } : {}) };
        } catch (e) {
          return { path, ...refusal(e) };
        }
      },
    }),

    write_file: tool({
      description: 'Write a text file in the workspace, replacing its content; missing parent directories are created.',
      inputSchema: writeFileSchema,
      execute: async ({ path, content }, { abortSignal }) => {
        try {
          // The content travels in an environment variable, never in the command line (no quoting, no size surprise).
          const parts = chunks(content, WRITE_CHUNK_CHARS);
          const target = quote(path);
          for (let i = 0; i < parts.length; i++) {
            const prep = i === 0 ? `d=$(dirname -- ${target}) && mkdir -p -- "$d" && : > ${target} && ` : '';
            const h = await helper(`${prep}printf '%s' "$KEEL_CONTENT" >> ${target}`, abortSignal, { KEEL_CONTENT: parts[i]! });
            if (!h.ok) return { path, error: h.error };
          }
          return { path, bytes: Buffer.byteLength(content, 'utf8') };
        } catch (e) {
          return { path, ...refusal(e) };
        }
      },
    }),

    list_directory: tool({
      description: 'List a directory of the workspace (`ls -la`: type and mode, size, date, name).',
      inputSchema: listDirectorySchema,
      execute: async ({ path }, { abortSignal }) => {
        const dir = path ?? '.';
        try {
          const h = await helper(`ls -la -- ${quote(dir)}`, abortSignal);
          if (!h.ok) return { path: dir, error: h.error };
          const c = cut(h.r.stdout, TOOL_OUTPUT_MAX_CHARS);
          return { path: dir, listing: c.text, ...(c.truncated ? { truncated: true } : {}) };
        } catch (e) {
          return { path: dir, ...refusal(e) };
        }
      },
    }),
  };
}
