// The refusals of media-service authentication, as AppErrors (problem+json codes of the media spec),
// so the identity service and the Bearer guard refuse in the same words. Statuses and headers are in
// platform.errors.ts.
import { AppError } from '../errors';
import '../platform.errors';

export const unauthenticated = (message = 'A valid Bearer access token is required') => new AppError('unauthenticated', message);

export const reauthRequired = (reason: string) =>
  new AppError('reauth-required', 'The session has ended; create a new session with your API key', { reason });

export const forbidden = () => new AppError('forbidden', 'The access token lacks the policy this route requires');

/** The bus did not answer a key or session query: fail closed, retryable. */
export const identityUnavailable = () => new AppError('identity-unavailable', 'The identity service did not answer; retry shortly');
