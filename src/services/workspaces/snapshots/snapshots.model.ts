// The snapshot and fork schemas of the workspace API: the single source of validation, types and OpenAPI.
import { t } from 'elysia';
import { Type } from '@sinclair/typebox';
import { CreatedWorkspace, NAME_PATTERN } from '../lifecycle/lifecycle.model';

export const CreateSnapshotBody = t.Object(
  { name: t.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 63, description: 'a label for you; need not be unique' }) },
  { description: 'unknown fields are ignored' },
);

export const Snapshot = t.Object({
  id: t.String(),
  name: t.String(),
  workspaceId: t.String({ description: 'the workspace it was taken from (it may be gone since)' }),
  template: t.String({ description: 'the template a workspace made from it runs on' }),
  sizeBytes: Type.Integer({ description: 'the committed image plus the volume archive' }),
  createdAt: t.String({ format: 'date-time' }),
});

export const SnapshotList = t.Object({ snapshots: t.Array(Snapshot) });
export const SnapshotIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) });
export const SnapshotDeleted = t.Object({ id: t.String(), deleted: t.Literal(true) });

export const ForkBody = t.Object(
  {
    name: t.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 60, description: 'the snapshot is named so; the workspaces `<name>-1` ... `<name>-<count>`' }),
    count: Type.Integer({ minimum: 1, maximum: 10, description: 'how many workspaces (1-10)' }),
  },
  { description: 'unknown fields are ignored' },
);

export const ForkResult = t.Object({ workspaces: t.Array(CreatedWorkspace) });
