// KeelError: one error for both of Keel's error models, the workspace envelope
// ({"error": {code, message, details}}) and the media services' RFC 9457 problem+json
// ({type, title, status, detail, code?, ...}).

export class KeelError extends Error {
  override readonly name = 'KeelError';
  constructor(
    /** The HTTP status (0 when no answer came: network error, timeout, a failed workspace). */
    readonly status: number,
    /** The API's machine-readable code (`WORKSPACE_NOT_FOUND`, `INVALID_REQUEST`...). */
    readonly code: string,
    message: string,
    /** The API's `details` (workspaces) or the problem's extension members (media services). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The error of an answer that is not 2xx: its body read in either model, or the status alone. */
  static async fromResponse(res: Response): Promise<KeelError> {
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      body = undefined;
    }
    return KeelError.fromBody(res.status, body) ?? new KeelError(res.status, `HTTP_${res.status}`, res.statusText || `HTTP ${res.status}`);
  }

  /** An error body (envelope or problem) as a KeelError; undefined when it is neither. */
  static fromBody(status: number, body: unknown): KeelError | undefined {
    if (!body || typeof body !== 'object') return undefined;
    const b = body as Record<string, unknown>;
    const env = b.error;
    if (env && typeof env === 'object') {
      const e = env as Record<string, unknown>;
      const details = e.details && typeof e.details === 'object' ? (e.details as Record<string, unknown>) : {};
      return new KeelError(status, String(e.code ?? `HTTP_${status}`), String(e.message ?? ''), details);
    }
    if (typeof b.title === 'string' || typeof b.type === 'string') {
      const { type, title, status: s, detail, code, ...rest } = b;
      const st = typeof s === 'number' ? s : status;
      const c = typeof code === 'string' ? code : typeof type === 'string' && type !== 'about:blank' ? type.split('/').pop()!.toUpperCase().replace(/-/g, '_') : `HTTP_${st}`;
      return new KeelError(st, c, String(detail ?? title ?? ''), { ...rest, ...(type !== undefined ? { type } : {}) });
    }
    return undefined;
  }
}
