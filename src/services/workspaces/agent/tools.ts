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
import { textOrBase64 } from '../files/text-or-base64';
import { EXEC_TIMEOUT_DEFAULT_MS, EXEC_TIMEOUT_MAX_MS } from '../exec/exec.model';

/** What the tools need of the exec feature: run one command to its end (the exec service's `run`). */
/**
 * What the tools need of the exec feature (its service): a command holds one of the actor's exec
 * slots (APP_QUOTA_EXECS) until it is gone, as POST .../exec does, and so does a file tool's helper
 * (`withExecSlot`); past the quota 429 QUOTA_EXCEEDED, which the tool hands to the model as its result.
 */
export interface WorkspaceShell {
  run(actor: Actor, workspaceId: string, input: ExecInput, signal?: AbortSignal): Promise<ExecResult>;
  withExecSlot<T>(actor: Actor, op: () => Promise<T>): Promise<T>;
}

/** What the file tools need of the files feature (its service, as GET/PUT .../files use it). */
export interface WorkspaceFiles {
  stat(actor: Actor, workspaceId: string, path: string): Promise<
    ({ kind: 'directory'; entries: { name: string; type: string; size: number; mode: string; modifiedAt: string }[] } | { kind: 'file'; size: number }) & {
      containerId: string;
      path: string;
    }
  >;
  /** At most APP_TOOL_READ_MAX_BYTES of the file, bounded whatever it is (files.service.ts). */
  readHead(containerId: string, path: string): Promise<{ bytes: Uint8Array; truncated: boolean; idle: boolean }>;
  readMaxBytes: number;
  write(actor: Actor, workspaceId: string, path: string, body: ReadableStream<Uint8Array> | null, declaredLength: number | null): Promise<{ path: string; size: number }>;
}

/** Characters of each output stream handed back to the model (a file's read: APP_TOOL_READ_MAX_BYTES). */
export const TOOL_OUTPUT_MAX_CHARS = 16_384;
export const WRITE_FILE_MAX_CHARS = 262_144;
/** Entries of a directory handed back by list_directory. */
export const LIST_MAX_ENTRIES = 1000;

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


function cut(text: string, max: number): { text: string; truncated: boolean } {
  return text.length > max ? { text: text.slice(0, max), truncated: true } : { text, truncated: false };
}

/** A workspace or engine refusal as the model reads it. */
function refusal(e: unknown): { error: string; code?: string } {
  if (e instanceof AppError && e.code === 'FILE_NOT_FOUND') return { error: 'No such file or directory', code: e.code };
  if (e instanceof AppError) return { error: e.message, code: e.code };
  return { error: e instanceof Error ? e.message : String(e) };
}

/** The tool set of one turn: `actor` is the caller of the turn, `workspaceId` the session's workspace. */
export function workspaceTools(shell: WorkspaceShell, files: WorkspaceFiles, actor: Actor, workspaceId: string): ToolSet {
  // Every command a tool runs holds an exec slot until it is gone (the exec service takes it), so
  // turns cannot run more commands at once than the actor's exec calls could.
  const run = (input: ExecInput, signal?: AbortSignal) => shell.run(actor, workspaceId, input, signal);

  /** A file operation holds an exec slot too: it runs a helper in the container (files.service.ts). */
  const withSlot = <T>(op: () => Promise<T>): Promise<T> => shell.withExecSlot(actor, op);

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
      description:
        `Read a file of the workspace: its first ${files.readMaxBytes} bytes at most (\`truncated: true\` past them), ` +
        'as UTF-8 text, or base64 with `encoding: "base64"` when the bytes are not text.',
      inputSchema: readFileSchema,
      execute: async ({ path }) => {
        try {
          return await withSlot(async () => {
            const found = await files.stat(actor, workspaceId, path);
            if (found.kind === 'directory') return { path, error: 'Is a directory: use list_directory' };
            const read = await files.readHead(found.containerId, found.path);
            const { encoding, content } = textOrBase64(read.bytes, read.truncated);
            return { path, content, ...(encoding === 'base64' ? { encoding } : {}), ...(read.truncated ? { truncated: true } : {}), ...(read.idle ? { idle: true } : {}) };
          });
        } catch (e) {
          return { path, ...refusal(e) };
        }
      },
    }),

    write_file: tool({
      description: 'Write a text file in the workspace, replacing its content; missing parent directories are created.',
      inputSchema: writeFileSchema,
      execute: async ({ path, content }) => {
        try {
          const bytes = Buffer.from(content, 'utf8');
          const r = await withSlot(() => files.write(actor, workspaceId, path, new Blob([bytes]).stream(), bytes.byteLength));
          return { path, bytes: r.size };
        } catch (e) {
          return { path, ...refusal(e) };
        }
      },
    }),

    list_directory: tool({
      description: `List a directory of the workspace: one line per entry (type, mode, size, modified, name), at most ${LIST_MAX_ENTRIES}.`,
      inputSchema: listDirectorySchema,
      execute: async ({ path }) => {
        const dir = path ?? '.';
        try {
          return await withSlot(async () => {
            const found = await files.stat(actor, workspaceId, dir);
            if (found.kind === 'file') return { path: dir, error: 'Not a directory: use read_file' };
            const shown = found.entries.slice(0, LIST_MAX_ENTRIES);
            const listing = shown.map((e) => `${e.type[0]} ${e.mode} ${e.size} ${e.modifiedAt} ${e.name}`).join('\n');
            return { path: dir, listing, ...(found.entries.length > shown.length ? { truncated: true } : {}) };
          });
        } catch (e) {
          return { path: dir, ...refusal(e) };
        }
      },
    }),
  };
}
