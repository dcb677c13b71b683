// A workspace's files and processes as MCP tools: the same services (ownership, running check,
// APP_FILE_MAX_BYTES, the processes quota) as GET/PUT .../files and .../processes. An agent reads
// text, so read_file answers UTF-8 text when the bytes are valid UTF-8 and base64 otherwise (saying
// which), and reads at most APP_TOOL_READ_MAX_BYTES of any file (/dev/zero, a FIFO, a growing file):
// past it the answer is truncated and says so.
import { Type } from '@sinclair/typebox';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { FilesService } from '../files/files.service';
import { textOrBase64 } from '../files/text-or-base64';
import { ProcessBody, SignalBody } from '../processes/processes.model';
import type { ProcessesService } from '../processes/processes.service';

const Id = Type.String({ minLength: 1, maxLength: 128, description: 'workspace id (`ws_...`)' });
const Path = Type.String({ minLength: 1, maxLength: 4096, pattern: '^[^\\u0000]+$', description: 'absolute path in the workspace, or relative to `/workspace`' });
const Pid = Type.String({ minLength: 1, maxLength: 64, description: 'process id (`proc_...`) from start_process' });
const propsOf = (s: unknown) => (s as { properties: Record<string, never> }).properties;

export const ReadFileInput = Type.Object({ id: Id, path: Path }, { additionalProperties: false });
export const WriteFileInput = Type.Object(
  {
    id: Id,
    path: Path,
    content: Type.String({ description: 'the whole file; replaces it (missing parents are made)' }),
    encoding: Type.Optional(Type.Union([Type.Literal('utf-8'), Type.Literal('base64')], { default: 'utf-8', description: '`base64` for binary content' })),
  },
  { additionalProperties: false },
);
export const ListDirectoryInput = Type.Object({ id: Id, path: Type.Optional(Path) }, { additionalProperties: false });
export const StartProcessInput = Type.Object({ id: Id, ...propsOf(ProcessBody) }, { additionalProperties: false });
export const ProcessRef = Type.Object({ id: Id, pid: Pid }, { additionalProperties: false });
export const SignalInput = Type.Object({ id: Id, pid: Pid, ...propsOf(SignalBody) }, { additionalProperties: false });

export function computerTools(deps: { files: FilesService; processes: ProcessesService }) {
  const { files, processes } = deps;
  return {
    async readFile(a: Actor, i: { id: string; path: string }) {
      const found = await files.stat(a, i.id, i.path);
      if (found.kind === 'directory') return { path: found.path, type: 'directory', entries: found.entries };
      const read = await files.readHead(found.containerId, found.path);
      // `size` is what stat reported: 0 for a device or a FIFO, whatever their read gave.
      return { path: found.path, size: found.size, ...textOrBase64(read.bytes, read.truncated), truncated: read.truncated, ...(read.idle ? { idle: true } : {}) };
    },
    async writeFile(a: Actor, i: { id: string; path: string; content: string; encoding?: 'utf-8' | 'base64' }) {
      const bytes = i.encoding === 'base64' ? Buffer.from(i.content, 'base64') : Buffer.from(i.content, 'utf-8');
      return files.write(a, i.id, i.path, new Response(bytes).body, bytes.byteLength);
    },
    async listDirectory(a: Actor, i: { id: string; path?: string }) {
      const found = await files.stat(a, i.id, i.path ?? '/workspace');
      if (found.kind === 'file') return { path: found.path, type: 'file', size: found.size };
      return { path: found.path, type: 'directory', entries: found.entries };
    },
    startProcess: (a: Actor, i: { id: string } & Record<string, unknown>) => {
      const { id, ...body } = i;
      return processes.start(a, id, body as never);
    },
    /** The status and the output kept so far (the last APP_PROCESS_OUTPUT_BYTES of each stream). */
    getProcess: async (a: Actor, i: { id: string; pid: string }) => ({ ...(await processes.get(a, i.id, i.pid)), output: await processes.output(a, i.id, i.pid) }),
    signalProcess: (a: Actor, i: { id: string; pid: string; signal: 'TERM' | 'KILL' | 'INT' | 'HUP' }) => processes.signal(a, i.id, i.pid, i.signal),
  };
}
