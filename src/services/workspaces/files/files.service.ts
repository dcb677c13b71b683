// Files of a running workspace, through small busybox helpers exec'd in its container (as the
// template's user): every path is resolved by the container's own kernel view, so a symlink to
// /etc/hostname reads the container's file and nothing reaches the host. Bytes stream both ways
// over the exec's socket with backpressure; an upload goes to a temporary name beside its target and
// is renamed only once it is whole, so a refused or broken upload leaves no partial file.
import { posix } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createChurnGuard } from '../../../platform/churn';
import { AppError } from '../../../platform/errors';
import type { Actor } from '../../../platform/auth/workspace-token';
import { EngineError, settledExitCode, type Engine, type ExecHandle } from '../engine/engine';
import { engineFailure, type Access } from '../access';
import type { FileEntry } from './files.model';
import { WorkspaceErrors } from '../workspaces.errors';

/** The directory relative paths start at (the templates' working directory and volume). */
export const WORKSPACE_DIR = '/workspace';
/** Exit status the helpers use for "no such path". */
const EXIT_MISSING = 44;
/**
 * Bytes of a helper's output Keel holds at most (a directory listing is ~30 to 300 bytes an entry:
 * some 10 000 to 60 000 entries). Past it the helper's exec is closed and the request answers 413
 * OUTPUT_TOO_LARGE: the entries parsed from 2 MiB and their JSON stay well within the 32 MiB a
 * request may add to Keel's memory.
 */
export const HELPER_OUTPUT_MAX_BYTES = 2 * 1024 * 1024;
/** A tool's read (readHead) of at least this many bytes is followed by a full collection. */
const READ_COLLECT_BYTES = 256 * 1024;
/** A read for a tool (readHead) that yields nothing for this long ends: a FIFO with no writer, a stalled device. */
export const READ_IDLE_MS = 10_000;
/**
 * $1 = path, $2 = bytes. Reports its pid on stderr first (the exec's process leads its own group), so
 * a read that stalls can be killed, then reads at most $2 bytes, so a read of /dev/zero ends in the
 * container too.
 */
const READ_HEAD = `printf '%s\\n' "$$" >&2; exec dd if="$1" bs=65536 iflag=count_bytes count="$2" 2>/dev/null`;
/** Bytes a download keeps queued for a slow client before the engine stream is held back. */
const DOWNLOAD_QUEUE_BYTES = 1024 * 1024;
/**
 * Bytes moved between two forced garbage collections. A transfer retains nothing, but every chunk it
 * passed on is garbage the collector lets pile up: measured on 500 MB, Keel's RSS grew ~90 MB without
 * this, ~60 MB with asynchronous collections; with a full one every 16 MB it swung between +10 and
 * +36 MB (a 16 MB sawtooth), with one every 8 MB it stays within +15 to +19 MB, for ~15 % throughput.
 */
const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;


// $1 = path. Answers "D" and one `stat` line per entry (symlinks as themselves), or "F" and the size
// of what the path leads to (symlinks followed, inside the container). The entries' names go to one
// stat per batch (xargs) rather than one per entry: a directory of 20 000 entries is a handful of
// processes, not 20 000. A name that vanished between the test and stat is left out.
const STAT = `p=$1
if [ -d "$p" ]; then
  cd -- "$p" 2>/dev/null || { echo 'Permission denied' >&2; exit 13; }
  echo D
  for f in .* *; do
    case "$f" in .|..) continue;; esac
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\\0' "$f"; fi
  done | xargs -0 -r stat -c '%f %s %Y %n' -- 2>/dev/null
  exit 0
elif [ -e "$p" ]; then
  [ -r "$p" ] || { echo 'Permission denied' >&2; exit 13; }
  echo F; stat -L -c %s -- "$p"
else exit ${EXIT_MISSING}; fi`;
const RECEIVE = `mkdir -p -- "$(dirname -- "$1")" && exec cat > "$1"`;
const COMMIT = `[ -d "$2" ] && [ ! -L "$2" ] && { echo 'Is a directory' >&2; exit 21; }; exec mv -f -- "$1" "$2"`;
const REMOVE = `[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_MISSING}
if [ -d "$1" ] && [ ! -L "$1" ]; then if [ "$2" = 1 ]; then exec rm -rf -- "$1"; else exec rmdir -- "$1"; fi; else exec rm -f -- "$1"; fi`;
const MOVE = `[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_MISSING}
mkdir -p -- "$(dirname -- "$2")" && exec mv -f -- "$1" "$2"`;

const notFound = () => WorkspaceErrors.FILE_NOT_FOUND('no such file or directory in the workspace');
export const outputTooLarge = (max: number) =>
  WorkspaceErrors.OUTPUT_TOO_LARGE(`the answer would be larger than ${max} bytes (a directory of too many entries); list a narrower directory`, { limit: max });
export const tooLarge = (max: number) => WorkspaceErrors.FILE_TOO_LARGE(`files are limited to ${max} bytes (APP_FILE_MAX_BYTES); nothing was written`, { limit: max });

/** A helper's failure as the API reports it; the helper's own message is not echoed (it repeats the path). */
function helperFailure(exitCode: number | null, stderr: string, what: string): AppError {
  if (exitCode === EXIT_MISSING || /No such file/.test(stderr)) return notFound();
  if (/Permission denied|Read-only file system|Operation not permitted/.test(stderr)) {
    return WorkspaceErrors.PERMISSION_DENIED(`the workspace's user may not ${what} this path`);
  }
  if (/Directory not empty/.test(stderr)) return WorkspaceErrors.FILE_CONFLICT('the directory is not empty; pass recursive=true to delete it with its content');
  if (/Is a directory|Not a directory|File exists/.test(stderr)) return WorkspaceErrors.FILE_CONFLICT(`cannot ${what} this path: a directory stands where a file is expected, or the reverse`);
  if (/No space left|Disk quota/.test(stderr)) return WorkspaceErrors.FILE_CONFLICT("the workspace's disk is full");
  return WorkspaceErrors.FILE_CONFLICT(`the workspace refused to ${what} this path`);
}

/** The absolute path a request names: absolute as given, or relative to /workspace; `..` is the container's business. */
export function resolvePath(path: string): string {
  return posix.normalize(path.startsWith('/') ? path : `${WORKSPACE_DIR}/${path}`).replace(/(.)\/$/, '$1');
}

/** A `stat -c '%f %s %Y %n'` line as an entry; null for a line that is not one (a name with a newline). */
function entry(line: string): FileEntry | null {
  const m = /^([0-9a-f]+) (\d+) (\d+) (.+)$/.exec(line);
  if (!m) return null;
  const raw = parseInt(m[1]!, 16);
  const kind = raw & 0o170000;
  return {
    name: m[4]!,
    type: kind === 0o040000 ? 'directory' : kind === 0o120000 ? 'symlink' : 'file',
    size: Number(m[2]),
    mode: (raw & 0o7777).toString(8).padStart(4, '0'),
    modifiedAt: new Date(Number(m[3]) * 1000).toISOString(),
  };
}

export type FileRead = { kind: 'directory'; entries: FileEntry[] } | { kind: 'file'; size: number };

export function createFilesService(deps: {
  engine: Engine;
  access: Pick<Access, 'runningContainer'>;
  /** APP_FILE_MAX_BYTES: the largest upload. */
  maxBytes: number;
  /** APP_TOOL_READ_MAX_BYTES: the most of a file a tool's read answers (readHead). */
  readMaxBytes: number;
}) {
  const { engine } = deps;

  /**
   * Runs a helper to its end; engine refusals of a container that stopped meanwhile read as 409. Its
   * output is bounded at the stream (execCollect): past HELPER_OUTPUT_MAX_BYTES the helper is killed
   * and the request answers 413.
   */
  async function helper(containerId: string, script: string, args: string[]) {
    let r: Awaited<ReturnType<Engine['execCollect']>>;
    try {
      r = await engine.execCollect(containerId, ['sh', '-c', script, 'keel-files', ...args], HELPER_OUTPUT_MAX_BYTES);
    } catch (e) {
      throw execFailure(e);
    }
    if (r.truncated) throw outputTooLarge(HELPER_OUTPUT_MAX_BYTES);
    return r;
  }

  function execFailure(e: unknown): AppError {
    if (e instanceof EngineError && (e.kind === 'conflict' || e.kind === 'not-found')) {
      return WorkspaceErrors.WORKSPACE_NOT_RUNNING('the workspace is not running; start it to reach its files', {});
    }
    return engineFailure(e);
  }

  /** An upload's last step: the whole temporary file renamed over the target (removed if that fails). */
  async function commit(containerId: string, tmp: string, abs: string, size: number) {
    const removeTmp = () => engine.execCollect(containerId, ['rm', '-f', '--', tmp]).catch(() => undefined);
    const r = await helper(containerId, COMMIT, [tmp, abs]).catch(async (e) => {
      await removeTmp();
      throw e;
    });
    if (r.exitCode !== 0) {
      await removeTmp();
      throw helperFailure(r.exitCode, r.stderr, 'write');
    }
    return { path: abs, size };
  }

  return {
    /** What the path is: a directory's entries, or a file's size (symlinks followed inside the container). */
    async stat(actor: Actor, workspaceId: string, path: string): Promise<FileRead & { containerId: string; path: string }> {
      const containerId = await deps.access.runningContainer(actor, workspaceId);
      const abs = resolvePath(path);
      const r = await helper(containerId, STAT, [abs]);
      if (r.exitCode !== 0) throw helperFailure(r.exitCode, r.stderr, 'read');
      const [kind, ...rest] = r.stdout.split('\n');
      if (kind === 'F') return { kind: 'file', size: Number(rest[0]) || 0, containerId, path: abs };
      const entries = rest.map(entry).filter((e): e is FileEntry => e !== null);
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { kind: 'directory', entries, containerId, path: abs };
    },

    /**
     * At most `readMaxBytes` of a file from its start, for a tool's answer (MCP read_file, the agent's
     * read_file): bounded before it is buffered whatever the file is. /dev/zero, a file that grows
     * while read: `truncated` once more than the bound came; a FIFO with no writer, a stalled device:
     * the read that yields nothing for READ_IDLE_MS is killed, `idle` and `truncated` true.
     */
    async readHead(containerId: string, path: string): Promise<{ bytes: Uint8Array; truncated: boolean; idle: boolean }> {
      const max = deps.readMaxBytes;
      const parts: Uint8Array[] = [];
      let held = 0;
      let truncated = false;
      let idle = false;
      let pid: number | undefined;
      let preamble = '';
      let h: ExecHandle | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stop = () => {
        clearTimeout(timer);
        h?.close();
      };
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          idle = truncated = true;
          stop();
          if (pid !== undefined && pid > 1) void engine.killProcessGroup(containerId, pid);
        }, READ_IDLE_MS);
      };
      try {
        // One byte past the bound tells a file of exactly `max` bytes from a longer one.
        h = await engine.execStart(containerId, { cmd: ['sh', '-c', READ_HEAD, 'keel-files', path, String(max + 1)] }, (s, b) => {
          if (truncated) return;
          if (s === 'stderr') {
            if (pid === undefined && preamble.length < 32) {
              preamble += Buffer.from(b).toString('latin1');
              const nl = preamble.indexOf('\n');
              if (nl >= 0) pid = Number(preamble.slice(0, nl)) || -1;
            }
            return;
          }
          arm();
          const room = max - held;
          if (b.byteLength > room) {
            truncated = true;
            if (room > 0) parts.push(b.slice(0, room));
            held = max;
            return stop();
          }
          // A copy: the engine's chunk may be a view of a larger buffer that must not be kept alive.
          parts.push(b.slice());
          held += b.byteLength;
        });
        arm();
        if (truncated) h.close();
        await h.done;
      } catch (e) {
        throw execFailure(e);
      } finally {
        clearTimeout(timer);
      }
      const bytes = Buffer.concat(parts);
      // The engine's chunks are garbage now; a tool's answer is copied several times on its way to
      // the model or client, so they are collected before it, as transfers do (createChurnGuard).
      if (held >= READ_COLLECT_BYTES) Bun.gc(true);
      return { bytes, truncated, idle };
    },

    /**
     * The bytes [start, start + length) of a file as a stream. The engine stream is paused while the
     * client is behind (at most ~1 MiB queued), and a client that leaves ends the reader in the container.
     */
    async open(containerId: string, path: string, range: { start: number; length: number } | null): Promise<ReadableStream<Uint8Array>> {
      // Through the workspace's daemon when it has one: its stream passes to the client untouched.
      try {
        const direct = await engine.download(containerId, path, range);
        if (direct) return direct;
      } catch (e) {
        throw e instanceof EngineError && e.kind === 'refused' ? helperFailure(1, e.message, 'read') : execFailure(e);
      }
      const cmd = range
        ? ['sh', '-c', 'exec dd if="$1" bs=65536 iflag=skip_bytes,count_bytes skip="$2" count="$3" 2>/dev/null', 'keel-files', path, String(range.start), String(range.length)]
        : ['cat', '--', path];
      let handle: ExecHandle | undefined;
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      let cancelled = false;
      const moved = createChurnGuard(COLLECT_EVERY_BYTES);
      const stream = new ReadableStream<Uint8Array>(
        {
          start: (c) => void (controller = c),
          pull: () => handle?.resume(),
          cancel: () => {
            cancelled = true;
            handle?.close();
          },
        },
        new ByteLengthQueuingStrategy({ highWaterMark: DOWNLOAD_QUEUE_BYTES }),
      );
      try {
        handle = await engine.execStart(containerId, { cmd }, (s, b) => {
          if (s !== 'stdout' || cancelled) return;
          controller.enqueue(b);
          moved(b.byteLength);
          if ((controller.desiredSize ?? 0) <= 0) handle?.pause();
        });
      } catch (e) {
        throw execFailure(e);
      }
      handle.done.then(
        () => !cancelled && controller.close(),
        (e) => !cancelled && controller.error(e),
      );
      return stream;
    },

    /**
     * Streams `body` into `path` (parents made): into a temporary file beside it, renamed over the
     * target once whole. Past `maxBytes` (declared or counted) 413 FILE_TOO_LARGE and nothing stays.
     */
    async write(actor: Actor, workspaceId: string, path: string, body: ReadableStream<Uint8Array> | null, declaredLength: number | null) {
      if (declaredLength !== null && declaredLength > deps.maxBytes) throw tooLarge(deps.maxBytes);
      const containerId = await deps.access.runningContainer(actor, workspaceId);
      const abs = resolvePath(path);
      if (abs === '/') throw WorkspaceErrors.FILE_CONFLICT('cannot write the root directory');
      const tmp = posix.join(posix.dirname(abs), `.keel-upload-${randomBytes(6).toString('hex')}`);
      // Through the workspace's daemon when it has one: the body passes to it untouched, and it keeps the limit.
      const direct = await engine.upload(containerId, tmp, body, deps.maxBytes).catch((e) => {
        throw execFailure(e);
      });
      if (direct) {
        if (!direct.ok) throw direct.tooLarge ? tooLarge(deps.maxBytes) : helperFailure(1, direct.message, 'write');
        return commit(containerId, tmp, abs, direct.size);
      }
      const stderr: Uint8Array[] = [];
      let h: ExecHandle;
      try {
        h = await engine.execStart(containerId, { cmd: ['sh', '-c', RECEIVE, 'keel-files', tmp], stdin: true }, (s, b) => void (s === 'stderr' && stderr.push(b)));
      } catch (e) {
        throw execFailure(e);
      }
      let size = 0;
      const moved = createChurnGuard(COLLECT_EVERY_BYTES);
      const failed = async (e: unknown): Promise<never> => {
        h.close();
        await engine.execCollect(containerId, ['rm', '-f', '--', tmp]).catch(() => undefined);
        throw e;
      };
      try {
        if (body) {
          for await (const chunk of body) {
            size += chunk.byteLength;
            if (size > deps.maxBytes) throw tooLarge(deps.maxBytes);
            await h.stdin!.write(chunk);
            moved(chunk.byteLength);
          }
        }
        h.stdin!.end();
        await h.done;
      } catch (e) {
        // The helper may have ended first (mkdir refused): its reason wins over the closed socket's.
        const code = e instanceof AppError ? 0 : await settledExitCode(h);
        return failed(code ? helperFailure(code, Buffer.concat(stderr).toString(), 'write') : e);
      }
      const code = await settledExitCode(h);
      if (code !== 0) return failed(helperFailure(code, Buffer.concat(stderr).toString(), 'write'));
      return commit(containerId, tmp, abs, size);
    },

    async remove(actor: Actor, workspaceId: string, path: string, recursive: boolean) {
      const containerId = await deps.access.runningContainer(actor, workspaceId);
      const abs = resolvePath(path);
      if (abs === '/') throw WorkspaceErrors.FILE_CONFLICT('cannot delete the root directory');
      const r = await helper(containerId, REMOVE, [abs, recursive ? '1' : '0']);
      if (r.exitCode !== 0) throw helperFailure(r.exitCode, r.stderr, 'delete');
      return { path: abs, deleted: true as const };
    },

    async move(actor: Actor, workspaceId: string, from: string, to: string) {
      const containerId = await deps.access.runningContainer(actor, workspaceId);
      const src = resolvePath(from);
      const dst = resolvePath(to);
      const r = await helper(containerId, MOVE, [src, dst]);
      if (r.exitCode !== 0) throw helperFailure(r.exitCode, r.stderr, 'move');
      return { from: src, to: dst };
    },

    maxBytes: deps.maxBytes,
    readMaxBytes: deps.readMaxBytes,
  };
}

export type FilesService = ReturnType<typeof createFilesService>;
