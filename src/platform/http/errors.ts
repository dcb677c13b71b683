// The one place an exception becomes a response. Two error models: the workspace envelope and
// RFC 9457 problem+json for the media services. Elysia's own errors (validation, unknown route,
// broken JSON) and anything unexpected pass through here; no stack trace or received value leaks.
// A code becomes a status and headers here, once, from the table of the service the app belongs to.
import { Elysia, t, ValidationError } from 'elysia';
import { AppError, headersOf, meaningOf, toEnvelope, toProblem, type ErrorTable } from '../errors';
import { EnvelopeErrors, ProblemErrors } from '../platform.errors';
import { isJsonMediaType, JsonRefusal, MAX_BODY_BYTES, MAX_JSON_DEPTH, parseJsonBody } from '../json';
import { createLogger, errorFields, type Logger } from '../runtime';

export type ErrorStyle = 'envelope' | 'problem';

/** Problem Details shape of the media services, for `response` declarations in OpenAPI. */
export const ProblemSchema = t.Object(
  {
    type: t.String(),
    title: t.String(),
    status: t.Number(),
    code: t.String({ description: 'stable machine-readable code' }),
    retryable: t.Boolean(),
    category: t.String({ description: 'transient, permanent or recoverable' }),
    instance: t.Optional(t.String()),
    on: t.Optional(t.String({ description: 'validation: body, query, path or headers' })),
    property: t.Optional(t.String({ description: 'validation, outside production only' })),
    detail: t.Optional(t.String({ description: 'validation, outside production only' })),
  },
  { additionalProperties: true, description: 'RFC 9457 Problem Details (application/problem+json)' },
);

/** The workspace API's error envelope, for `response` declarations in OpenAPI. */
export const ErrorEnvelope = t.Object(
  {
    error: t.Object({
      code: t.String({ description: 'stable machine-readable code, e.g. WORKSPACE_NOT_FOUND' }),
      message: t.String(),
      details: t.Record(t.String(), t.Unknown()),
    }),
  },
  { description: 'error envelope' },
);

interface Issue {
  in: string;
  property: string;
  detail: string;
}

function validationIssues(e: ValidationError): Issue[] {
  // Elysia checks a coerced query number on its own (type 'property') and loses its key: the
  // schema's `title` names it (e.g. t.Integer({ minimum: 1, title: 'pageSize' })).
  if (e.type === 'property') {
    const title = (e.validator as { title?: unknown } | undefined)?.title;
    return e.all.slice(0, 1).map((i: any) => ({ in: 'query', property: typeof title === 'string' ? `/${title}` : '/', detail: i.message }));
  }
  const where = e.type === 'params' ? 'path' : e.type;
  const root = ((e.validator as { schema?: unknown } | undefined)?.schema ?? e.validator) as Schema | undefined;
  // TypeBox messages describe the expectation, never the value received; pointers are cut to what the schema declares.
  return e.all.slice(0, 10).map((i: any) => ({ in: where, property: declaredPointer(root, i.path || '/'), detail: i.message }));
}

type Schema = { properties?: Record<string, Schema>; items?: Schema };

/**
 * The part of a JSON pointer that names declared schema properties (and array indexes). A key the
 * schema does not declare (an unexpected property, a record's key) was written by the client and is
 * not repeated: the pointer stops at its parent.
 */
function declaredPointer(root: Schema | undefined, pointer: string): string {
  const kept: string[] = [];
  let schema = root;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (schema?.properties && Object.hasOwn(schema.properties, seg)) schema = schema.properties[seg];
    else if (schema?.items && /^\d{1,9}$/.test(seg)) schema = schema.items;
    else break;
    kept.push(raw);
  }
  return '/' + kept.join('/');
}

/** Turns any thrown thing into an AppError for the given error model. */
export function toAppError(code: string | number, error: unknown, style: ErrorStyle, production: boolean, log: Logger): AppError {
  if (error instanceof AppError) return error;
  if (code === 'VALIDATION' && error instanceof ValidationError) {
    const issues = validationIssues(error);
    if (style === 'envelope') {
      return EnvelopeErrors.INVALID_REQUEST(`invalid ${issues[0]?.in ?? 'request'}: ${issues[0]?.property ?? ''} ${issues[0]?.detail ?? ''}`.trim(), {
        errors: issues,
      });
    }
    const first = issues[0];
    return ProblemErrors.validation('Request validation failed', {
      on: first?.in ?? 'body',
      ...(production || !first ? {} : { property: first.property, detail: first.detail }),
    });
  }
  if (code === 'PARSE') {
    // Elysia wraps what a parser throws in its ParseError; the hardened parser's refusal is the cause.
    const refusal = error instanceof JsonRefusal ? error : (error as { cause?: unknown } | undefined)?.cause;
    if (error instanceof BodyTooLarge || refusal instanceof BodyTooLarge) return tooLarge(style);
    if (refusal instanceof JsonRefusal) {
      const details = { reason: refusal.reason, ...(refusal.reason === 'depth' ? { limit: MAX_JSON_DEPTH } : {}) };
      return style === 'envelope'
        ? EnvelopeErrors.INVALID_REQUEST(refusal.message, details)
        : ProblemErrors.parse(refusal.message[0]!.toUpperCase() + refusal.message.slice(1), details);
    }
    return style === 'envelope'
      ? EnvelopeErrors.INVALID_REQUEST('the request body is not valid JSON')
      : ProblemErrors.parse('The request body could not be parsed');
  }
  if (code === 'NOT_FOUND') {
    return style === 'envelope'
      ? EnvelopeErrors.NOT_FOUND('no such route')
      : ProblemErrors['not-found']('No such route');
  }
  if (code === 'INVALID_COOKIE_SIGNATURE' || code === 'INVALID_FILE_TYPE') {
    return style === 'envelope' ? EnvelopeErrors.INVALID_REQUEST('invalid request') : ProblemErrors.validation('invalid request');
  }
  log.error('unhandled error', { code: String(code), ...errorFields(error) });
  return style === 'envelope'
    ? EnvelopeErrors.INTERNAL_ERROR('internal server error')
    : ProblemErrors.internal('Internal server error');
}

/** The response of an error: its status, headers and problem fields from the service's table. */
export function render(e: AppError, style: ErrorStyle, path: string | undefined, table: ErrorTable): Response {
  const spec = meaningOf(e, table);
  const headers: Record<string, string> = {
    'content-type': style === 'envelope' ? 'application/json' : 'application/problem+json',
    ...headersOf(e, spec),
  };
  const body = style === 'envelope' ? toEnvelope(e) : toProblem(e, spec, path);
  return new Response(JSON.stringify(body), { status: spec.status, headers });
}

/**
 * Installs the error model on an app. Call it first on a service's root app. `errors` is the
 * service's table (the platform's codes of its style joined to its own): the only place a code
 * becomes a status.
 */
export function errorHandling(style: ErrorStyle, opts: { production: boolean; errors: ErrorTable; log?: Logger; streamedBodies?: StreamedBodies }) {
  const log = opts.log ?? createLogger({ component: 'http' });
  // One per error model, production switch and table: two services in one process keep their own.
  const app = new Elysia({ name: `platform.errors.${style}`, seed: `${opts.production}:${Object.keys(opts.errors).join(',')}` });
  app.use(bodyLimit(style, opts.streamedBodies));
  app.use(hardenedJsonBody(opts.streamedBodies));
  // The media services (problem style) do not enable HEAD (media spec, GET /health).
  if (style === 'problem') app.use(headNotEnabled());
  return app.onError(
    { as: 'global' },
    ({ code, error, set, route }) => {
      const appError = toAppError(code, error, style, opts.production, log);
      // `instance` is the matched route template (`/works/:id`), never the received path: a problem
      // must not repeat what the client sent. Unknown routes have no instance.
      const res = render(appError, style, typeof route === 'string' && route.length > 0 ? route : undefined, opts.errors);
      // Headers set earlier in the request (rate limit, CORS) stay on the error response.
      for (const [k, v] of Object.entries(set.headers)) {
        if (typeof v === 'string' && !res.headers.has(k)) res.headers.set(k, v);
      }
      return res;
    },
  );
}

/**
 * Makes the hardened parser (platform/json.ts) the only reader of request bodies, on every route of
 * the app it is used in. JSON media types go through it. Form bodies are refused (no Keel route takes
 * a form, and Elysia would JSON.parse multipart fields without those checks). Other types (text,
 * octet-stream) stay Elysia's and never become objects, so the route's schema refuses them. An empty
 * body is no body (null), as for a POST without one. Refusals reach onError as PARSE (see toAppError).
 */
export function hardenedJsonBody(streamed?: StreamedBodies) {
  return new Elysia({ name: 'platform.hardened-json-body' }).onParse({ as: 'global' }, async ({ request }, contentType) => {
    // A streamed body is the route's to read from request.body, never buffered here.
    if (streamed?.(request)) return null;
    if (isJsonMediaType(contentType)) {
      const text = await boundedText(request);
      return text.trim() === '' ? null : parseJsonBody(text);
    }
    const type = contentType.toLowerCase();
    if (type.startsWith('multipart/') || type === 'application/x-www-form-urlencoded') {
      if ((await boundedText(request)).trim() === '') return null;
      throw new JsonRefusal('not-json', 'the request body must be JSON (application/json)');
    }
    // Any other type is read here too, within the limit (no route but a streamed one takes it; its
    // schema refuses a string where it wants an object).
    if (!streamed) return;
    return await boundedText(request);
  });
}

/**
 * The body as text, refused past `limit` (MAX_BODY_BYTES unless a route that reads its own body says
 * otherwise) as it arrives: a chunked body declares no length, and a service with streamed uploads
 * lets Bun accept large bodies (main.ts), so the limit is ours. Past it: BodyTooLarge.
 */
export async function boundedText(request: Request, limit = MAX_BODY_BYTES): Promise<string> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) throw new BodyTooLarge();
  if (!request.body) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limit) throw new BodyTooLarge();
    parts.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(parts));
}

/** A body past its limit found while reading it; rendered as 413 in the service's error model. */
export class BodyTooLarge extends Error {
  constructor() {
    super('request body too large');
  }
}
const tooLarge = (style: ErrorStyle) =>
  style === 'envelope'
    ? EnvelopeErrors.PAYLOAD_TOO_LARGE(`request bodies are limited to ${MAX_BODY_BYTES} bytes`)
    : ProblemErrors['payload-too-large'](`Request bodies are limited to ${MAX_BODY_BYTES} bytes`);

/**
 * Refuses HEAD on every route (405 with `Allow: GET`, rendered by the service's error model): the
 * media spec does not enable HEAD, and Bun would otherwise answer it from the GET handler.
 */
export function headNotEnabled() {
  return new Elysia({ name: 'platform.head-not-enabled' }).onRequest(({ request }) => {
    if (request.method === 'HEAD') {
      throw ProblemErrors['method-not-allowed']('HEAD is not enabled on this service');
    }
  });
}

export { MAX_BODY_BYTES };

/**
 * Requests whose body the route streams itself (file uploads, process stdin): they escape
 * MAX_BODY_BYTES and the JSON parser, and the route enforces its own limit as it reads.
 */
export type StreamedBodies = (request: Request) => boolean;

/**
 * Refuses a declared body over MAX_BODY_BYTES before reading it, in the service's error model.
 * (A chunked body with no length meets Bun's own `maxRequestBodySize`, set by main.ts.)
 */
function bodyLimit(style: ErrorStyle, streamed?: StreamedBodies) {
  return new Elysia({ name: `platform.body-limit.${style}` }).onRequest(({ request }) => {
    if (streamed?.(request)) return;
    const length = Number(request.headers.get('content-length') ?? 0);
    if (length > MAX_BODY_BYTES) throw tooLarge(style);
  });
}
