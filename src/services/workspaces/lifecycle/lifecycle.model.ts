// The workspace API's request and response schemas: the single source of validation, types and OpenAPI.
import { t, type Static } from 'elysia';
import { Type } from '@sinclair/typebox';
import { DEFAULT_TEMPLATE } from '../images/templates';
import { WORKSPACE_STATUSES } from '../workspaces.tables';

/** Lowercase letters, digits, `.`, `_`, `-`; starts with a letter or digit; 1-63 characters (a DNS label's length). */
export const NAME_PATTERN = '^[a-z0-9][a-z0-9._-]{0,62}$';

// Unions of literals, not t.UnionEnum: in a query, Elysia 1.4 fills an absent optional UnionEnum with its first value.
// TypeBox's plain integer: Elysia's t.Integer also accepts numeric strings and documents itself as such.
const JsonInteger = Type.Integer;

export const WorkspaceStatusSchema = t.Union(
  [t.Literal('creating'), t.Literal('starting'), t.Literal('running'), t.Literal('stopping'), t.Literal('stopped'), t.Literal('restarting'), t.Literal('failed'), t.Literal('paused')],
  { description: 'creating, starting, stopping and restarting are in progress; failed carries `reason`; paused: processes frozen, memory kept' },
);
export const WorkspaceTypeSchema = t.Union([t.Literal('persistent'), t.Literal('temporary')]);
// The schema and the table's status list must name the same values (a compile-time check).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const STATUS_SCHEMA_MATCHES_TABLE: Same<Static<typeof WorkspaceStatusSchema>, (typeof WORKSPACE_STATUSES)[number]> = true;

export const RepoSchema = t.Object(
  {
    url: t.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'http://, https:// or git://, cloned on the Keel host; no query or fragment. Credentials as https://user:token@host/... are sent as an ' +
        'Authorization header and never stored or shown. Link-local and cloud-metadata hosts are refused (loopback and private ones too with APP_CLONE_DENY_PRIVATE=true)',
    }),
    branch: t.Optional(t.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_][A-Za-z0-9._/-]*$', description: 'default: the remote HEAD' })),
  },
  { description: 'unknown fields are ignored' },
);

export const CreateWorkspaceBody = t.Object(
  {
    name: t.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 63, description: 'unique among all workspaces' }),
    template: t.Optional(t.String({ minLength: 1, maxLength: 63, default: DEFAULT_TEMPLATE })),
    type: t.Optional(WorkspaceTypeSchema),
    port: t.Optional(
      JsonInteger({
        minimum: 1024,
        maximum: 65535,
        description: 'host port of the code server; assigned from APP_WORKSPACE_PORT_RANGE when absent. Outside that range: 400 INVALID_REQUEST, except for admin tokens',
      }),
    ),
    repo: t.Optional(RepoSchema),
    snapshot: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 64,
        description: "a snapshot's id (GET /api/snapshots): the workspace starts with its file system and volume, on its template; `template` and `repo` are then ignored. Not yours or absent: 404 SNAPSHOT_NOT_FOUND",
      }),
    ),
    autoStopMinutes: t.Optional(
      t.Number({
        minimum: 0,
        maximum: 525_600,
        description: 'stop the workspace after this many minutes without activity (fractions allowed; 0: never). Default: APP_AUTO_STOP_MINUTES (60)',
      }),
    ),
  },
  {
    description: 'unknown fields are ignored',
    examples: [{ name: 'demo', template: 'minimal', type: 'persistent', repo: { url: 'https://github.com/oven-sh/bun', branch: 'main' } }],
  },
);
export type CreateWorkspaceInput = Static<typeof CreateWorkspaceBody>;

export const Urls = t.Object({
  codeServer: t.String({ description: "the code server, with the workspace's secret as HTTP Basic credentials: http://keel:<secret>@host:port (shown to the owner and admins only)" }),
  rdp: t.String(),
  ssh: t.String(),
});

export const Stats = t.Object({
  cpu: t.String({ description: 'percentage of one CPU, e.g. "1.25%"' }),
  memory: t.String({ description: 'used / limit, e.g. "12.4MiB / 256MiB"' }),
  disk: t.String({ description: 'size of /workspace / size of the filesystem holding it; "unknown" while stopped and never measured' }),
});

const workspaceFields = {
  id: t.String(),
  name: t.String(),
  status: WorkspaceStatusSchema,
  port: JsonInteger(),
  template: t.String(),
  type: WorkspaceTypeSchema,
  createdAt: t.String({ format: 'date-time' }),
};

const CREATED_EXAMPLE = { id: 'ws_1m8k2x9q', name: 'demo', status: 'creating', port: 20000, template: 'minimal', type: 'persistent', createdAt: '2026-01-05T10:00:00.000Z' };
export const CreatedWorkspace = t.Object(workspaceFields, { examples: [CREATED_EXAMPLE] });

export const Workspace = t.Object({
  ...workspaceFields,
  containerId: t.Nullable(t.String(), { description: 'null until the container exists, or after it was removed outside Keel' }),
  urls: Urls,
  reason: t.Optional(t.String({ description: 'why the workspace is failed' })),
  autoStopMinutes: t.Number({ description: 'minutes without activity after which Keel stops the workspace; 0: never' }),
  stopReason: t.Optional(t.Literal('idle', { description: 'present while the workspace is stopped because it was idle for autoStopMinutes' })),
});
export type WorkspaceView = Static<typeof Workspace>;

export const WorkspaceWithStats = t.Object(
  {
    ...Workspace.properties,
    engine: t.Optional(t.String({ description: 'admins only: the APP_ENGINES engine the workspace was placed on and stays on (docs/workspaces.md, "Several engines")' })),
    stats: Stats,
  },
  {
    examples: [
      {
        ...CREATED_EXAMPLE,
        status: 'running',
        containerId: '4f1c2d3e5a6b',
        urls: { codeServer: 'http://keel:3f9a...@localhost:20000', rdp: 'rdp://localhost:20000', ssh: 'ssh://localhost:20000' },
        stats: { cpu: '1.25%', memory: '12.4MiB / 256MiB', disk: '4.1MiB / 58.3GiB' },
      },
    ],
  },
);

export const WorkspaceList = t.Object({ workspaces: t.Array(Workspace) });

export const ListQuery = t.Object({
  status: t.Optional(WorkspaceStatusSchema),
  type: t.Optional(WorkspaceTypeSchema),
});

export const IdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) });
export const StopQuery = t.Object({ force: t.Optional(t.Boolean({ default: false, description: 'SIGKILL instead of SIGTERM' })) });
export const DeleteQuery = t.Object({ volumes: t.Optional(t.Boolean({ default: false, description: 'also remove the workspace volume' })) });

export const ActionResult = t.Object({ id: t.String(), status: WorkspaceStatusSchema });
export const DeleteResult = t.Object({ id: t.String(), deleted: t.Literal(true) });

const QuotaCounts = t.Object({
  workspaces: JsonInteger({ description: 'workspaces held, whatever their status' }),
  running: JsonInteger({ description: 'workspaces creating, starting, restarting, running or paused' }),
  execs: JsonInteger({ description: 'exec calls in flight' }),
  streams: JsonInteger({ description: 'open log follows, streaming execs and agent streams' }),
  volumes: JsonInteger({ description: 'volumes kept by deletes of persistent workspaces (GET /api/volumes lists them)' }),
});

export const QuotaView = t.Object({
  exempt: t.Boolean({ description: 'true for admin tokens: no quota applies' }),
  limits: QuotaCounts,
  used: QuotaCounts,
});
