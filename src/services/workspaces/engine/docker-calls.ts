// How a dockerode call becomes an EngineError with a kind (engine/engine.ts): shared by docker.ts
// and the files that hold its network calls, so no caller ever reads an HTTP status code.
import { EngineError, type EngineErrorKind } from './engine';

// Socket-level failures: nothing answers at DOCKER_HOST (no daemon, no socket, no permission, cut off).
const UNREACHABLE = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'EPERM', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTCONN', 'FailedToOpenSocket', 'ConnectionRefused']);

function kindOf(statusCode: number | undefined, code: string | undefined, msg: string): EngineErrorKind {
  if (statusCode === 404) return 'not-found';
  if (statusCode === 409 || statusCode === 304) return 'conflict';
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500) return 'refused';
  if (statusCode !== undefined) return 'failed';
  if ((code && UNREACHABLE.has(code)) || /\b(connect|socket)\b.*\b(ENOENT|ECONNREFUSED|EACCES)\b/i.test(msg)) return 'unavailable';
  return 'failed';
}

export function engineError(e: unknown): EngineError {
  if (e instanceof EngineError) return e;
  const err = e as { statusCode?: number; code?: string; json?: { message?: string }; message?: string };
  const msg = (err?.json?.message ?? err?.message ?? String(e)).replace(/^\(HTTP code \d+\)\s*/, '').trim();
  return new EngineError(msg, kindOf(err?.statusCode, err?.code, msg));
}

export async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw engineError(e);
  }
}

/**
 * Like call, but the engine answering `status` yields `fallback`: 404 is an absent object, 304 a
 * container already in the asked state, 409 a kill of a container that does not run.
 */
export async function callOr<T, F>(status: number, fallback: F, fn: () => Promise<T>): Promise<T | F> {
  try {
    return await fn();
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === status) return fallback;
    throw engineError(e);
  }
}

/** Resolves when the stream ends, closes or fails (whichever comes first), after `onEnd` ran once. */
export function streamEnd(stream: NodeJS.ReadableStream, onEnd: () => void): Promise<void> {
  return new Promise((resolve) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      onEnd();
      resolve();
    };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', end);
  });
}
