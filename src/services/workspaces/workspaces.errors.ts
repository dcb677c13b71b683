// Every code the workspace API answers with beyond the platform's (platform.errors.ts), and what it
// means on the wire. The error renderer and the OpenAPI description both read this table: a throw
// site names a code, never a status. The codes are fixed by the spec (../shared/spec/).
import { defineErrors, errorFactories, joinErrors } from '../../platform/errors';
import { operationsFor } from '../../platform/http/openapi-errors';
import { envelopeErrorTable } from '../../platform/platform.errors';

const own = defineErrors({
  WORKSPACE_NOT_FOUND: { status: 404, description: 'no workspace with this id is yours' },
  SESSION_NOT_FOUND: { status: 404, description: 'no agent session with this id in the workspace' },
  WEBHOOK_NOT_FOUND: { status: 404, description: 'no webhook with this id is yours' },
  DELIVERY_NOT_FOUND: { status: 404, description: 'no delivery with this id for the webhook' },
  SNAPSHOT_NOT_FOUND: { status: 404, description: 'no snapshot with this id is yours' },
  APPROVAL_NOT_FOUND: { status: 404, description: 'no tool-call approval with this id in the agent session' },
  VOLUME_NOT_FOUND: { status: 404, description: 'no kept volume with this name or former workspace id is yours' },
  WORKSPACE_EXISTS: { status: 409, description: 'a workspace with this name exists (names are unique across owners)' },
  PORT_UNAVAILABLE: { status: 409, description: 'the port is reserved by another workspace or in use on the host' },
  INVALID_TRANSITION: { status: 409, description: 'the current status does not allow this move (details.status, details.allowedFrom)' },
  WORKSPACE_NOT_RUNNING: { status: 409, description: 'the workspace is not running; start it first' },
  SESSION_BUSY: { status: 409, description: 'a turn is in flight in this agent session' },
  APPROVAL_DECIDED: { status: 409, description: 'the approval is not waiting any more: decided, timed out, or its turn ended (details.status)' },
  WEBHOOK_INACTIVE: { status: 409, description: 'the webhook is disabled' },
  DELIVERY_IN_FLIGHT: { status: 409, description: 'an attempt of this delivery is in flight' },
  FILE_NOT_FOUND: { status: 404, description: 'nothing at this path in the workspace' },
  PROCESS_NOT_FOUND: { status: 404, description: 'no process with this id in the workspace' },
  TERMINAL_NOT_FOUND: { status: 404, description: 'no live terminal with this id in the workspace (ended, or detached for over 10 minutes)' },
  PREVIEW_NOT_FOUND: { status: 404, description: 'no preview link with this id or secret' },
  PERMISSION_DENIED: { status: 403, description: "the template's user may not read, write, delete or move this path" },
  FILE_CONFLICT: { status: 409, description: 'the path is in the way: a non-empty directory without recursive=true, a directory where a file is written, a full disk' },
  PROCESS_NOT_RUNNING: { status: 409, description: 'the process has ended or was lost (details.status)' },
  PREVIEW_EXPIRED: { status: 410, description: 'the preview link is past its expiresAt' },
  PREVIEW_REVOKED: { status: 410, description: 'the preview link was revoked' },
  FILE_TOO_LARGE: { status: 413, description: 'the upload is larger than APP_FILE_MAX_BYTES (details.limit); nothing was written' },
  OUTPUT_TOO_LARGE: { status: 413, description: "what Keel would read back from the workspace (a directory listing, a helper's output) is past its bound (details.limit); the read was ended there" },
  RANGE_NOT_SATISFIABLE: { status: 416, description: 'the Range lies outside the file (details.size)' },
  PREVIEW_UNREACHABLE: { status: 502, description: "nothing answers on the workspace's port" },
  QUOTA_EXCEEDED: { status: 429, description: 'a per-actor quota is full (details.quota, details.limit); free one first' },
  ENGINE_ERROR: { status: 502, description: 'the Docker engine refused the operation' },
  UPSTREAM_ERROR: { status: 502, description: 'the model provider failed' },
  ENGINE_UNAVAILABLE: { status: 503, retryAfter: 5, description: 'no container engine answers; nothing was done' },
  CLONE_QUEUE_FULL: { status: 503, retryAfter: 10, description: 'too many repo clones run or wait; nothing was created' },
  ISOLATION_UNAVAILABLE: { status: 503, description: 'Keel cannot firewall workspace networks here' },
  PREVIEW_UNAVAILABLE: { status: 503, retryAfter: 5, description: "the preview's workspace is not running (details.status); its link answers again once it runs" },
  SHUTTING_DOWN: { status: 503, description: 'Keel is shutting down' },
  TEMPLATE_NOT_FOUND: { status: 404, description: 'no template with this name or id that you may use (yours, public, or built in)' },
  BUILD_NOT_FOUND: { status: 404, description: 'no build with this id of the template' },
  TEMPLATE_EXISTS: { status: 409, description: 'you have a template of this name, or it is a built-in one' },
  TEMPLATE_NOT_READY: { status: 409, description: "the template has no built version yet (building, or its build failed: details.status), or its image is being made again" },
  TEMPLATE_BUILDING: { status: 409, description: 'a build of this template is running; wait for it to end' },
});

/** The workspace API's table: the platform's envelope codes and the service's own. */
export const workspaceErrorTable = joinErrors(envelopeErrorTable, own);

/** What the service throws: one factory per code (`WorkspaceErrors.X(message, details)`), no HTTP in them. */
export const WorkspaceErrors = errorFactories(workspaceErrorTable);
export type WorkspaceErrorCode = keyof typeof workspaceErrorTable;

/** A route's operationId and the codes it answers beyond the platform's (spread into its `detail`). */
export const workspaceOperation = operationsFor(workspaceErrorTable);
