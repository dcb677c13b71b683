// Every code the identity service answers with beyond the platform's, and what it means on the
// wire; the problem+json renderer and the OpenAPI description both read this table.
import { defineErrors, errorFactories, joinErrors } from '../../platform/errors';
import { operationsFor } from '../../platform/http/openapi-errors';
import { problemErrorTable } from '../../platform/platform.errors';

const own = defineErrors({
  IDENTITY_ACTOR_NOT_FOUND: { status: 404, description: 'no such actor' },
  IDENTITY_SESSION_NOT_FOUND: { status: 404, description: 'no such session' },
  IDENTITY_KEYS_EXTERNAL: { status: 409, description: 'the signing key is given by APP_IDENTITY_SIGNING_KEY; rotate it there' },
});

/** The identity service's table: the platform's problem codes and the service's own. */
export const identityErrorTable = joinErrors(problemErrorTable, own);

/** What the service throws: one factory per code (`IdentityErrors.X(message, details)`), no HTTP in them. */
export const IdentityErrors = errorFactories(identityErrorTable);
export type IdentityErrorCode = keyof typeof identityErrorTable;

/** A route's operationId and the codes it answers beyond the platform's (spread into its `detail`). */
export const identityOperation = operationsFor(identityErrorTable);
