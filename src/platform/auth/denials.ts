// The refusals of media-service authentication, as AppErrors (problem+json codes of the media spec),
// so the identity service and the Bearer guard refuse in the same words.
import { AppError } from '../errors';

export const unauthenticated = (message = 'A valid Bearer access token is required') =>
  new AppError('unauthenticated', 401, message, { headers: { 'www-authenticate': 'Bearer' }, category: 'recoverable' });

export const reauthRequired = (reason: string) =>
  new AppError('reauth-required', 401, 'The session has ended; create a new session with your API key', {
    details: { reason },
    headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    category: 'recoverable',
  });

export const forbidden = () => new AppError('forbidden', 403, 'The access token lacks the policy this route requires');

/** The bus did not answer a key or session query: fail closed, retryable. */
export const identityUnavailable = () =>
  new AppError('identity-unavailable', 503, 'The identity service did not answer; retry shortly', {
    retryable: true,
    category: 'transient',
    headers: { 'retry-after': '1' },
  });
