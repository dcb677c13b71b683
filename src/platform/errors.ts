// Domain errors and their two renderings: the workspace envelope and RFC 9457 problem+json.
// Services throw AppError with a stable code; each service's HTTP layer renders it once.

export type ErrorCategory = 'transient' | 'permanent' | 'recoverable';

export interface AppErrorOptions {
  details?: Record<string, unknown>;
  retryable?: boolean;
  category?: ErrorCategory;
  /** Extra response headers (Retry-After, ...). */
  headers?: Record<string, string>;
  /** Problem+json `type` slug; defaults to the code in kebab case. */
  type?: string;
}

export class AppError extends Error {
  readonly details: Record<string, unknown>;
  readonly retryable: boolean;
  readonly category: ErrorCategory;
  readonly headers: Record<string, string>;
  readonly type: string | undefined;

  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    opts: AppErrorOptions = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.details = opts.details ?? {};
    this.retryable = opts.retryable ?? status >= 500;
    this.category = opts.category ?? (status >= 500 ? 'transient' : 'permanent');
    this.headers = opts.headers ?? {};
    this.type = opts.type;
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
  const slug = e.type ?? e.code.toLowerCase().replaceAll('_', '-');
  return {
    type: PROBLEM_BASE + slug,
    title: e.message,
    status: e.status,
    code: e.code,
    retryable: e.retryable,
    category: e.category,
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
