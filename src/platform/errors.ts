// Domain errors and their two renderings: the workspace envelope and RFC 9457 problem+json.
// Services throw AppError(code, message, details); what a code means on the wire (its HTTP status,
// Retry-After, retryable, category) is written once, in the service's `<service>.errors.ts` table
// (defineErrors), which both the error renderer and the OpenAPI builder read. A throw site never
// picks a status.

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

const registry = new Map<string, ResolvedErrorSpec>();

function resolve(spec: ErrorSpec): ResolvedErrorSpec {
  return { ...spec, retryable: spec.retryable ?? spec.status >= 500, category: spec.category ?? (spec.status >= 500 ? 'transient' : 'permanent') };
}

/**
 * Declares a service's error table and makes its codes known to every renderer in the process. A
 * code has one meaning: declaring it again with another status is a programming error, refused at
 * start-up (at import).
 */
export function defineErrors<const T extends ErrorTable>(table: T): T {
  for (const [code, spec] of Object.entries(table)) {
    const known = registry.get(code);
    if (known && known.status !== spec.status) throw new Error(`error code ${code} is declared with status ${known.status} and ${spec.status}`);
    registry.set(code, resolve(spec));
  }
  return table;
}

/** What a code means, or undefined for a code no table declares. */
export const errorSpec = (code: string): ResolvedErrorSpec | undefined => registry.get(code);

/** The meaning of an undeclared code: an internal failure, retryable. */
const UNDECLARED: ResolvedErrorSpec = { status: 500, retryable: true, category: 'transient', description: 'an undeclared error code' };

export interface AppErrorOptions {
  /** Seconds for Retry-After when they are known only at the throw site (a rate limit's window). */
  retryAfter?: number;
  /** Headers known only at the throw site (a WWW-Authenticate with an error parameter). */
  headers?: Record<string, string>;
  /**
   * The meaning sent along by another process over the bus, used only when this process declares
   * no table for the code (the asker need not load the answerer's table).
   */
  remote?: { status: number; retryable?: boolean };
}

export class AppError extends Error {
  readonly details: Record<string, unknown>;
  readonly opts: AppErrorOptions;

  constructor(
    readonly code: string,
    message: string,
    details: Record<string, unknown> = {},
    opts: AppErrorOptions = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.details = details;
    this.opts = opts;
  }

  /** The table's row for this code. */
  get spec(): ResolvedErrorSpec {
    const declared = registry.get(this.code);
    if (declared) return declared;
    const remote = this.opts.remote;
    return remote ? resolve({ status: remote.status, retryable: remote.retryable, description: '' }) : UNDECLARED;
  }
  get status(): number {
    return this.spec.status;
  }
  get retryable(): boolean {
    return this.spec.retryable;
  }
  get category(): ErrorCategory {
    return this.spec.category;
  }
  /** The response headers: the table's, Retry-After (throw site first), then the throw site's own. */
  get headers(): Record<string, string> {
    const spec = this.spec;
    const retryAfter = this.opts.retryAfter ?? spec.retryAfter;
    return { ...spec.headers, ...(retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {}), ...this.opts.headers };
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

/** Workspace API body: `{ error: { code, message, details } }`. */
export function toEnvelope(e: AppError) {
  return { error: { code: e.code, message: e.message, details: e.details } };
}

const PROBLEM_BASE = 'https://keel.dev/problems/';

/** RFC 9457 body for the media services; `code` is the stable machine-readable name. */
export function toProblem(e: AppError, instance?: string) {
  const spec = e.spec;
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
