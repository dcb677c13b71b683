// Domain errors and their two renderings: the workspace envelope and RFC 9457 problem+json.
// A service throws the typed factories of its `<service>.errors.ts` (`WorkspaceErrors.WORKSPACE_NOT_FOUND(message,
// details)`): an AppError is a code, a message and details, nothing of HTTP. What a code means on the
// wire (its HTTP status, Retry-After, retryable, category) is written once, in the service's table,
// which the HTTP adapter (platform/http/errors.ts), the bus adapter (bus/bus.ts) and the OpenAPI
// builder are given: there is no process-wide registry, so nothing depends on what was imported.

export type ErrorCategory = 'transient' | 'permanent' | 'recoverable';

/** One row of a service's error table: what the code means on the wire. */
export interface ErrorSpec {
  status: number;
  /** Defaults to status >= 500. */
  retryable?: boolean;
  /** Defaults to `transient` for 5xx, else `permanent`. */
  category?: ErrorCategory;
  /** Seconds sent as Retry-After when the throw site gives none. */
  retryAfter?: number;
  /** Fixed response headers (WWW-Authenticate, Allow). */
  headers?: Record<string, string>;
  /** When a client meets it: documented in the OpenAPI description. */
  description: string;
}

export type ErrorTable = Record<string, ErrorSpec>;

export interface ResolvedErrorSpec extends ErrorSpec {
  retryable: boolean;
  category: ErrorCategory;
}

function resolve(spec: ErrorSpec): ResolvedErrorSpec {
  return { ...spec, retryable: spec.retryable ?? spec.status >= 500, category: spec.category ?? (spec.status >= 500 ? 'transient' : 'permanent') };
}

/** Declares an error table (typed, so its codes are known to the compiler); registers nothing. */
export function defineErrors<const T extends ErrorTable>(table: T): T {
  return table;
}

/**
 * Tables joined into one (a service's own and the platform's it answers with). A code has one
 * meaning: the same code with two statuses is a programming error, refused at start-up (at import).
 */
export function joinErrors<const T extends ErrorTable[]>(...tables: T): UnionToIntersection<T[number]> {
  const out: ErrorTable = {};
  for (const table of tables) {
    for (const [code, spec] of Object.entries(table)) {
      const known = out[code];
      if (known && known.status !== spec.status) throw new Error(`error code ${code} is declared with status ${known.status} and ${spec.status}`);
      out[code] = spec;
    }
  }
  return out as UnionToIntersection<T[number]>;
}
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The meaning of an undeclared code: an internal failure, retryable. */
const UNDECLARED: ResolvedErrorSpec = { status: 500, retryable: true, category: 'transient', description: 'an undeclared error code' };

export interface AppErrorOptions {
  /** Seconds until a retry may succeed, when they are known only at the throw site (a rate limit's window). */
  retryAfter?: number;
  /** Response headers known only at the throw site (a route's Content-Range). */
  headers?: Record<string, string>;
  /**
   * The meaning sent along by another process over the bus, used only when the table of the
   * service that renders the error does not know the code (the asker need not load the answerer's table).
   */
  remote?: { status: number; retryable?: boolean };
}

export class AppError<Code extends string = string> extends Error {
  readonly details: Record<string, unknown>;
  readonly opts: AppErrorOptions;

  constructor(
    readonly code: Code,
    message: string,
    details: Record<string, unknown> = {},
    opts: AppErrorOptions = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.details = details;
    this.opts = opts;
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

/** One factory per code of a table: `errors.WORKSPACE_NOT_FOUND(message, details)`. */
export type ErrorFactories<T extends ErrorTable> = {
  readonly [C in keyof T & string]: (message: string, details?: Record<string, unknown>, opts?: AppErrorOptions) => AppError<C>;
};

/** The typed factories of a table's codes: what services throw (they never see the table's statuses). */
export function errorFactories<T extends ErrorTable>(table: T): ErrorFactories<T> {
  const out: Record<string, unknown> = {};
  for (const code of Object.keys(table)) out[code] = (message: string, details?: Record<string, unknown>, opts?: AppErrorOptions) => new AppError(code, message, details, opts);
  return Object.freeze(out) as ErrorFactories<T>;
}

/**
 * What an error means on the wire for the service rendering it: its table's row, else the meaning
 * its answerer sent over the bus, else an internal failure.
 */
export function meaningOf(e: AppError, table: ErrorTable): ResolvedErrorSpec {
  const declared = Object.hasOwn(table, e.code) ? table[e.code] : undefined;
  if (declared) return resolve(declared);
  const remote = e.opts.remote;
  return remote ? resolve({ status: remote.status, retryable: remote.retryable, description: '' }) : UNDECLARED;
}

/** The response headers of an error: the table's, Retry-After (throw site first), then the throw site's own. */
export function headersOf(e: AppError, spec: ResolvedErrorSpec): Record<string, string> {
  const retryAfter = e.opts.retryAfter ?? spec.retryAfter;
  return { ...spec.headers, ...(retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {}), ...e.opts.headers };
}

/** Workspace API body: `{ error: { code, message, details } }`. */
export function toEnvelope(e: AppError) {
  return { error: { code: e.code, message: e.message, details: e.details } };
}

const PROBLEM_BASE = 'https://keel.dev/problems/';

/** RFC 9457 body for the media services; `code` is the stable machine-readable name. */
export function toProblem(e: AppError, spec: ResolvedErrorSpec, instance?: string) {
  return {
    type: PROBLEM_BASE + e.code.toLowerCase().replaceAll('_', '-'),
    title: e.message,
    status: spec.status,
    code: e.code,
    retryable: spec.retryable,
    category: spec.category,
    ...(instance ? { instance } : {}),
    ...e.details,
  };
}

/** Words that must never reach a log line or a response: secrets, tokens, keys. */
const SECRET_KEYS = /secret|token|password|authorization|api[-_]?key|cookie/i;

/** A copy of `value` with every secret-looking field replaced, for logs. */
export function scrub(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : scrub(v, depth + 1);
  return out;
}
