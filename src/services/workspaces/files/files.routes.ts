// HTTP wiring of a workspace's files: bytes (with Range) or a listing, streamed uploads, delete, move.
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { IdParams } from '../lifecycle/lifecycle.model';
import { WorkspaceErrors, workspaceOperation as op } from '../workspaces.errors';
import { DirectoryListing, FileBytes, UploadBody, FileDeleted, FileDeleteQuery, FileMoveBody, FileMoved, FilePathQuery, FileWritten } from './files.model';
import type { FilesService } from './files.service';

const FILES_PATH = /^\/api\/workspaces\/[^/]+\/files$/;

/** PUT .../files reads its own body (streamed, limited by APP_FILE_MAX_BYTES): the service app must not buffer it. */
export const streamedFileUpload = (request: Request) => request.method === 'PUT' && FILES_PATH.test(new URL(request.url).pathname);

/**
 * One `bytes=` range of a file of `size` bytes as [start, length]; null: serve the whole file (no
 * Range, several ranges, or a form we do not read); 'unsatisfiable': 416.
 */
export function parseRange(header: string | null, size: number): { start: number; length: number } | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    const length = Math.min(suffix, size);
    return { start: size - length, length };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, length: end - start + 1 };
}

export function filesRoutes(deps: { auth: WorkspaceAuthPlugin; files: FilesService }) {
  const { files } = deps;
  return new Elysia({ name: 'workspaces.files' })
    .use(deps.auth)
    .get(
      '/api/workspaces/:id/files',
      async ({ params, query, actor, request }) => {
        const found = await files.stat(actor, params.id, query.path);
        if (found.kind === 'directory') return { entries: found.entries };
        const range = parseRange(request.headers.get('range'), found.size);
        if (range === 'unsatisfiable') {
          throw WorkspaceErrors.RANGE_NOT_SATISFIABLE('the range lies outside the file', { size: found.size }, { headers: { 'content-range': `bytes */${found.size}` } });
        }
        const body = await files.open(found.containerId, found.path, range);
        const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
        // No Content-Length: Bun sends a streamed body chunked whatever the header says.
        if (!range) return new Response(body, { status: 200, headers }) as unknown as { entries: [] };
        headers['content-range'] = `bytes ${range.start}-${range.start + range.length - 1}/${found.size}`;
        // A Response passes through unvalidated; the cast only satisfies the JSON 200 schema's type.
        return new Response(body, { status: 206, headers }) as unknown as { entries: [] };
      },
      {
        params: IdParams,
        query: FilePathQuery,
        response: { 200: DirectoryListing },
        detail: {
          tags: ['files'],
          ...op('readWorkspaceFile', ['WORKSPACE_NOT_FOUND', 'FILE_NOT_FOUND', 'PERMISSION_DENIED', 'WORKSPACE_NOT_RUNNING', 'FILE_CONFLICT', 'OUTPUT_TOO_LARGE', 'RANGE_NOT_SATISFIABLE', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          responses: { 200: FileBytes },
          summary: "A file's bytes (Range honoured) or a directory's entries",
          description:
            'Paths are absolute inside the workspace or relative to `/workspace`, resolved in the container\'s own file system (a symlink there is followed inside the container, never on the host). ' +
            'A file answers its bytes as `application/octet-stream`, streamed; `Range: bytes=a-b` (one range, also `a-` and `-n`) answers 206 with Content-Range, a range past the end 416 `RANGE_NOT_SATISFIABLE`. ' +
            'A directory answers `{entries: [{name, type, size, mode, modifiedAt}]}` sorted by name; symlinks are listed as themselves. ' +
            'A listing is bounded: past 2 MiB of entries (some 10 000 to 60 000, by name length) 413 `OUTPUT_TOO_LARGE`.',
        },
      },
    )
    .put(
      '/api/workspaces/:id/files',
      async ({ params, query, actor, request, set }) => {
        const declared = request.headers.get('content-length');
        const result = await files.write(actor, params.id, query.path, request.body, declared === null ? null : Number(declared));
        set.status = 200;
        return result;
      },
      {
        params: IdParams,
        query: FilePathQuery,
        response: { 200: FileWritten },
        detail: {
          tags: ['files'],
          requestBody: UploadBody,
          ...op('writeWorkspaceFile', ['WORKSPACE_NOT_FOUND', 'FILE_NOT_FOUND', 'PERMISSION_DENIED', 'WORKSPACE_NOT_RUNNING', 'FILE_CONFLICT', 'FILE_TOO_LARGE', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          summary: 'Create or replace a file with the raw request body (streamed; parents made)',
          description:
            'The body is the file\'s bytes, any content type (e.g. `curl -T file` or `--data-binary @file`), with a Content-Length or chunked. ' +
            'It is streamed into the container as the template\'s user, to a temporary name beside the target that replaces the target only once whole: ' +
            'a refused or broken upload leaves no partial file (missing parent directories it made stay).\n\n' +
            'Past `APP_FILE_MAX_BYTES` (default 1 GiB), declared or counted: 413 `FILE_TOO_LARGE` and nothing is written.',
        },
      },
    )
    .delete(
      '/api/workspaces/:id/files',
      ({ params, query, actor }) => files.remove(actor, params.id, query.path, query.recursive === true),
      {
        params: IdParams,
        query: FileDeleteQuery,
        response: { 200: FileDeleted },
        detail: {
          tags: ['files'],
          ...op('deleteWorkspaceFile', ['WORKSPACE_NOT_FOUND', 'FILE_NOT_FOUND', 'PERMISSION_DENIED', 'WORKSPACE_NOT_RUNNING', 'FILE_CONFLICT', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          summary: 'Delete a file, a symlink, or a directory (recursive=true for a non-empty one)',
          description: 'A symlink is deleted itself, never what it points at.',
        },
      },
    )
    .post(
      '/api/workspaces/:id/files/move',
      ({ params, body, actor }) => files.move(actor, params.id, body.from, body.to),
      {
        params: IdParams,
        body: FileMoveBody,
        response: { 200: FileMoved },
        detail: {
          tags: ['files'],
          ...op('moveWorkspaceFile', ['WORKSPACE_NOT_FOUND', 'FILE_NOT_FOUND', 'PERMISSION_DENIED', 'WORKSPACE_NOT_RUNNING', 'FILE_CONFLICT', 'ENGINE_ERROR', 'ENGINE_UNAVAILABLE']),
          summary: 'Move or rename a file or directory (parents of the target made)',
          description: 'An existing file at `to` is replaced.',
        },
      },
    );
}
