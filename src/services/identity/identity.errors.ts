// Every code the identity service answers with beyond the platform's, and what it means on the
// wire; the problem+json renderer and the OpenAPI description both read this table.
import { defineErrors } from '../../platform/errors';
import { operationsFor } from '../../platform/http/openapi-errors';
import { problemPlatformErrors } from '../../platform/platform.errors';

const own = defineErrors({
  IDENTITY_ACTOR_NOT_FOUND: { status: 404, description: 'no such actor' },
  IDENTITY_SESSION_NOT_FOUND: { status: 404, description: 'no such session' },
  IDENTITY_KEYS_EXTERNAL: { status: 409, description: 'the signing key is given by APP_IDENTITY_SIGNING_KEY; rotate it there' },
});

/** The identity service's table: the platform's problem codes and the service's own. */
export const identityErrors = { ...problemPlatformErrors, ...own };
export type IdentityErrorCode = keyof typeof identityErrors;

/** A route's operationId and the codes it answers beyond the platform's (spread into its `detail`). */
export const identityOperation = operationsFor(identityErrors);
