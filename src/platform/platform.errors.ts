// The codes the platform itself answers with, before or around any service's own: the workspace
// envelope's (UPPER_CASE), the media services' and identity's problem+json (kebab-case), and the
// bus's. Each service's error table (`<service>.errors.ts`) joins its own codes to these; the
// factories here are for the platform's own throw sites (auth guards, the body parser, the bus).
import { defineErrors, errorFactories } from './errors';

/** Codes of the workspace API's envelope that the platform answers with. */
export const envelopeErrorTable = defineErrors({
  INVALID_REQUEST: { status: 400, description: 'the body, query, path or a header is malformed (details.errors names the property), or a value is refused' },
  UNAUTHORIZED: { status: 401, headers: { 'www-authenticate': 'Bearer' }, description: 'no valid Bearer token' },
  FORBIDDEN: { status: 403, description: 'the token is valid but may not do this (admins only)' },
  NOT_FOUND: { status: 404, description: 'no such route or file' },
  PAYLOAD_TOO_LARGE: { status: 413, description: 'the request body is over 4 MiB' },
  RATE_LIMITED: { status: 429, retryable: true, category: 'transient', description: 'the rate limit of the token is spent; retry after Retry-After seconds' },
  INTERNAL_ERROR: { status: 500, description: 'an unexpected failure inside Keel' },
});

/** Codes of the media services' and identity's problem+json that the platform answers with. */
export const problemErrorTable = defineErrors({
  parse: { status: 400, description: 'the body is not JSON, or is nested too deep, or uses a reserved key' },
  unauthenticated: { status: 401, category: 'recoverable', headers: { 'www-authenticate': 'Bearer' }, description: 'no valid Bearer access token' },
  'reauth-required': {
    status: 401,
    category: 'recoverable',
    headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    description: 'the session has ended; create a new one with the API key',
  },
  forbidden: { status: 403, description: 'the access token lacks the policy this route requires' },
  'not-found': { status: 404, description: 'no such route' },
  'method-not-allowed': { status: 405, headers: { allow: 'GET' }, description: 'HEAD is not enabled' },
  'payload-too-large': { status: 413, description: 'the request body is over 4 MiB' },
  validation: { status: 422, description: 'the body, query, path or a header does not match the schema' },
  'rate-limited': { status: 429, retryable: true, category: 'transient', description: 'the rate budget is spent; retry after Retry-After seconds' },
  internal: { status: 500, description: 'an unexpected failure inside Keel' },
  'identity-unavailable': { status: 503, retryAfter: 1, description: 'the identity service did not answer a key or session query' },
});

/** Codes of a question asked on the bus that nobody answered. */
export const busErrorTable = defineErrors({
  BUS_HANDLER_FAILED: { status: 500, description: 'the answering service failed' },
  BUS_UNAVAILABLE: { status: 503, description: 'the bus is not connected' },
  BUS_NO_ANSWERER: { status: 503, description: 'no service answers the question' },
  BUS_TIMEOUT: { status: 504, description: 'no answer in time' },
});

export const EnvelopeErrors = errorFactories(envelopeErrorTable);
export const ProblemErrors = errorFactories(problemErrorTable);
export const BusErrors = errorFactories(busErrorTable);
