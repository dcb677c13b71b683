// Schemas of the files API: the path query, a directory's entries, and the answers of write, delete and move.
import { t, type Static } from 'elysia';

/** Absolute inside the workspace, or relative to /workspace; never a NUL. */
const PathString = (description: string) => t.String({ minLength: 1, maxLength: 4096, pattern: '^[^\\u0000]+$', description });

export const FilePathQuery = t.Object({ path: PathString('absolute path in the workspace, or relative to /workspace') }, { additionalProperties: false });

export const FileDeleteQuery = t.Object(
  {
    path: PathString('absolute path in the workspace, or relative to /workspace'),
    recursive: t.Optional(t.BooleanString({ default: false, description: 'true: a directory and everything in it; false: a file, a symlink or an empty directory' })),
  },
  { additionalProperties: false },
);

export const FileEntry = t.Object(
  {
    name: t.String(),
    type: t.Union([t.Literal('file'), t.Literal('directory'), t.Literal('symlink')], { description: 'a symlink is reported as itself, not followed' }),
    size: t.Number({ multipleOf: 1, description: 'bytes' }),
    mode: t.String({ pattern: '^[0-7]{4}$', description: 'permission bits in octal, e.g. 0644' }),
    modifiedAt: t.String({ format: 'date-time' }),
  },
);
export type FileEntry = Static<typeof FileEntry>;

export const DirectoryListing = t.Object({ entries: t.Array(FileEntry) });

export const FileWritten = t.Object({ path: t.String({ description: 'the absolute path written' }), size: t.Number({ multipleOf: 1, description: 'bytes written' }) });

export const FileDeleted = t.Object({ path: t.String(), deleted: t.Literal(true) });

export const FileMoveBody = t.Object(
  { from: PathString('the file or directory to move'), to: PathString('its new path; missing parent directories are made, an existing file there is replaced') },
  { additionalProperties: false },
);
export const FileMoved = t.Object({ from: t.String(), to: t.String() });

/** A file's bytes in the OpenAPI: the 200/206 answer of GET .../files when the path is a file. */
export const FileBytes = {
  description: 'A directory: `{"entries": [...]}` (DirectoryListing). A file: its bytes, `application/octet-stream`; with `Range: bytes=a-b` 206 and Content-Range.',
  content: {
    'application/octet-stream': { schema: { type: 'string' as const, format: 'binary' } },
  },
};

/** The raw body of PUT .../files in the OpenAPI (the route reads it as a stream; no schema validates it). */
export const UploadBody = {
  required: false,
  description: "the file's bytes, any length up to APP_FILE_MAX_BYTES, with a Content-Length or chunked",
  content: { 'application/octet-stream': { schema: { type: 'string' as const, format: 'binary' as const } } },
};
