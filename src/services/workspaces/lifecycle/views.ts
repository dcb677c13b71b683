// The one view of a workspace resource: get, list and create all answer through workspaceView
// (create projected to the creation subset its schema names), so a field is shaped in one place.
import { CreatedWorkspace, type WorkspaceView } from './lifecycle.model';
import type { WorkspaceRow } from '../workspaces.tables';
import type { Static } from 'elysia';
import { codeServerUrl } from './code-secret';
import type { Actor } from '../../../platform/auth/workspace-token';

export type CreatedView = Static<typeof CreatedWorkspace>;

/** `codeSecret` is the workspace's code-server secret: only its owner (or an admin) is ever answered a view. */
export function workspaceView(row: WorkspaceRow, publicHost: string, codeSecret: string): WorkspaceView {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    port: row.port,
    template: row.template,
    type: row.type,
    createdAt: row.createdAt,
    containerId: row.containerId,
    urls: {
      codeServer: codeServerUrl(publicHost, row.port, codeSecret),
      rdp: `rdp://${publicHost}:${row.rdpPort}`,
      ssh: `ssh -p ${row.sshPort} keel@${publicHost}`,
    },
    ...(row.status === 'failed' && row.reason ? { reason: row.reason } : {}),
    autoStopMinutes: row.autoStopMinutes,
    ...(row.stopReason ? { stopReason: row.stopReason } : {}),
  };
}

const CREATED_FIELDS = Object.keys(CreatedWorkspace.properties) as (keyof CreatedView)[];

/** The 201 answer of a creation: the view, cut to the fields CreatedWorkspace declares. */
export function createdView(row: WorkspaceRow, publicHost: string, codeSecret: string): CreatedView {
  const full = workspaceView(row, publicHost, codeSecret);
  return Object.fromEntries(CREATED_FIELDS.map((k) => [k, full[k]])) as CreatedView;
}

/**
 * Whose list an actor reads, as the key of its cached answer: every admin reads the same list (all
 * workspaces), anyone else only their own. Distinct prefixes, so no `sub` can collide with "admin".
 */
export const listScope = (actor: Actor) => (actor.admin ? 'admin' : `sub:${actor.id}`);
