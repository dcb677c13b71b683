// The refusals of media-service authentication, as AppErrors (problem+json codes of the media spec),
// so the identity service and the Bearer guard refuse in the same words. Statuses and headers are in
// platform.errors.ts.
import { ProblemErrors } from '../platform.errors';

export const unauthenticated = (message = 'A valid Bearer access token is required') => ProblemErrors.unauthenticated(message);

export const reauthRequired = (reason: string) =>
  ProblemErrors['reauth-required']('The session has ended; create a new session with your API key', { reason });

export const forbidden = () => ProblemErrors.forbidden('The access token lacks the policy this route requires');

/** The bus did not answer a key or session query: fail closed, retryable. */
export const identityUnavailable = () => ProblemErrors['identity-unavailable']('The identity service did not answer; retry shortly');
