// One bus interface for request/reply and publish/subscribe; memory.ts and nats.ts implement it
// with the same subjects and JSON payloads, so a service can move process by changing APP_BUS.
import { AppError, meaningOf, type ErrorTable } from '../errors';
import { BusErrors } from '../platform.errors';
import type { BusEvents, BusQueries, DURABLE_EVENTS } from './subjects';

export type { BusEvents, BusQueries } from './subjects';
export type QuerySubject = keyof BusQueries;
export type EventSubject = keyof BusEvents;
export type DurableSubject = (typeof DURABLE_EVENTS)[number];
/** Durable subjects one consumer may take together, in the order they were published. */
export type DurablePattern = 'evt.workspace.*';

/**
 * The order key of a durable event: events of one key are stored in the order they were published
 * and reach each consumer in that order, even when one fails and is tried again; events of other
 * keys flow meanwhile. A workspace's events share its id; an asset's and a job's theirs.
 */
export function orderKeyOf(subject: string, payload: unknown): string {
  const p = (payload ?? {}) as { workspace?: { id?: unknown }; assetId?: unknown; job?: { id?: unknown } };
  if (subject.startsWith('evt.workspace.') && typeof p.workspace?.id === 'string') return `workspace:${p.workspace.id}`;
  if (subject.startsWith('evt.catalog.') && typeof p.assetId === 'string') return `asset:${p.assetId}`;
  if (subject === 'evt.workers.jobProgress' && typeof p.job?.id === 'string') return `job:${p.job.id}`;
  // Anything else keeps the order of its subject.
  return subject;
}

export type EventHandler<S extends EventSubject> = (payload: BusEvents[S], subject: S) => void | Promise<void>;
export type QueryHandler<S extends QuerySubject> = (
  request: BusQueries[S]['request'],
) => BusQueries[S]['reply'] | Promise<BusQueries[S]['reply']>;

export interface Bus {
  /**
   * Fire and forget: a failing subscriber is logged and never reaches the publisher. A durable event
   * on NATS is sent to JetStream until stored; with `untilStored` the promise resolves only then (or
   * rejects when the bus closes first), so an outbox marks an event sent only when it is safe.
   */
  publish<S extends EventSubject>(subject: S, payload: BusEvents[S], opts?: { untilStored?: boolean }): Promise<void>;
  /** `pattern` is a subject or ends in `.*` / `.>` (NATS wildcards). Returns the unsubscribe function. */
  subscribe<S extends EventSubject>(pattern: S | `${string}.*` | `${string}.>`, handler: EventHandler<S>): () => void;
  /**
   * At-least-once delivery of a durable event (DURABLE_EVENTS) to the consumer named `durable`: on
   * NATS a JetStream durable consumer, so events published while the consumer was down arrive when
   * it comes back, and one replica of the consumer gets each event. The event is acknowledged when
   * the handler resolves; a handler that throws gets it again, before any later event of the same
   * order key (orderKeyOf), while other keys flow. On NATS, after APP_BUS_MAX_DELIVER attempts the
   * event is stored on `dlq.<subject>` and logged. In process: a plain subscription.
   */
  consume<S extends DurableSubject>(durable: string, subject: S | DurablePattern, handler: EventHandler<S>): () => void;
  /** Ask the one service that answers `subject`. An AppError thrown by the answerer is rethrown here. */
  request<S extends QuerySubject>(
    subject: S,
    payload: BusQueries[S]['request'],
    opts?: { timeoutMs?: number },
  ): Promise<BusQueries[S]['reply']>;
  /**
   * Answer `subject`; queue-grouped so one replica answers each request. `errors` is the answering
   * service's table: what a failure's code means (status, retryable) travels with it to the asker.
   */
  answer<S extends QuerySubject>(subject: S, handler: QueryHandler<S>, errors: ErrorTable): () => void;
  close(): Promise<void>;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/**
 * A failed answer. A reply is the bare object of the subject (CONTRACT "Bus replies"); a failure
 * travels with the NATS service headers `Nats-Service-Error` (the message) and
 * `Nats-Service-Error-Code` (the HTTP-like status), and this body, which the requester turns back into
 * the same AppError. The in-process bus hands the same error over.
 */
export interface BusFailure {
  code: string;
  status: number;
  message: string;
  details?: Record<string, unknown>;
  retryable?: boolean;
}

export const SERVICE_ERROR_HEADER = 'Nats-Service-Error';
export const SERVICE_ERROR_CODE_HEADER = 'Nats-Service-Error-Code';

/** The failure an answerer sends: its code's meaning read once, here, from the answerer's table. */
export function busFailure(e: unknown, errors: ErrorTable): BusFailure {
  if (e instanceof AppError) {
    const spec = meaningOf(e, errors);
    return { code: e.code, status: spec.status, message: e.message, details: e.details, retryable: spec.retryable };
  }
  return { code: 'BUS_HANDLER_FAILED', status: 500, message: 'the answering service failed' };
}

/** The answerer's status and retryable are used only where the service rendering it has no row for the code. */
export function failureError(f: BusFailure): AppError {
  return new AppError(f.code, f.message, f.details, { remote: { status: f.status, retryable: f.retryable } });
}

export const busTimeout = (subject: string) =>
  BusErrors.BUS_TIMEOUT(`no answer on ${subject} in time`);
export const busUnavailable = (subject: string) =>
  BusErrors.BUS_UNAVAILABLE(`the bus is not connected; ${subject} cannot be asked now`);
export const busNoAnswerer = (subject: string) =>
  BusErrors.BUS_NO_ANSWERER(`no service answers ${subject}`);

/** NATS subject matching: `*` is one token, `>` the rest. */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true;
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
