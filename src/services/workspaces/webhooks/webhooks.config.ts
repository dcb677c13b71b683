// The webhook dispatcher's environment variables, parsed once (a bad value stops start-up naming it).
import { ConfigError, parseDuration, readBool, readDuration, readInt, readString, type Env } from '../../../platform/config';

/** CONTRACT.md: the Standard Webhooks schedule. Attempt n waits schedule[n-1] after the previous one. */
export const DEFAULT_RETRY_SCHEDULE = '0,5s,5m,30m,2h,5h,10h,14h,20h,24h';

export function parseRetrySchedule(raw: string): number[] | null {
  const parts = raw.split(',');
  if (parts.length === 0 || parts.length > 50) return null;
  const delays = parts.map(parseDuration);
  return delays.every((d): d is number => d !== null) ? delays : null;
}

export interface WebhooksConfig {
  /** Delay before each attempt: [0] before the first, [1] before the second, ...; its length is the attempt limit. */
  retrySchedule: number[];
  /** APP_WEBHOOK_DENY_PRIVATE: refuse loopback and private targets too (link-local and metadata always are). */
  denyPrivate: boolean;
  /** Time a receiver has to answer (headers and the capped body) before the attempt counts as failed. */
  timeoutMs: number;
  /** A registration whose deliveries have failed without a success for this long is disabled. */
  disableAfterMs: number;
  /** Deliveries in flight at once (over all registrations). */
  concurrency: number;
  /** APP_WEBHOOK_HOOK_CONCURRENCY: attempts in flight at once for one registration (the rest take turns). */
  hookConcurrency: number;
  /** APP_WEBHOOK_MAX_PENDING: pending deliveries of one registration past which ping and redeliver answer 429. */
  maxPending: number;
  /** APP_QUOTA_WEBHOOKS: registrations per actor (admins exempt). */
  quota: number;
  /** Delivered and failed deliveries stay in the log this long. */
  retentionMs: number;
  /** APP_WEBHOOK_RETENTION_COUNT: ended deliveries kept per registration at most (the newest). */
  retentionCount: number;
  /** APP_WEBHOOK_PRUNE_INTERVAL: how often the pruning pass runs (and once at start-up). */
  pruneIntervalMs: number;
}

export function loadWebhooksConfig(env: Env = process.env): WebhooksConfig {
  const raw = readString(env, 'APP_WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE);
  const retrySchedule = parseRetrySchedule(raw);
  if (!retrySchedule) {
    throw new ConfigError('APP_WEBHOOK_RETRY_SCHEDULE', 'must be a comma list of delays such as 0,5s,5m,30m,2h (units ms, s, m, h, d)');
  }
  return {
    retrySchedule,
    denyPrivate: readBool(env, 'APP_WEBHOOK_DENY_PRIVATE', false),
    timeoutMs: readDuration(env, 'APP_WEBHOOK_TIMEOUT', '15s', 100),
    disableAfterMs: readDuration(env, 'APP_WEBHOOK_DISABLE_AFTER', '5d', 1),
    concurrency: readInt(env, 'APP_WEBHOOK_CONCURRENCY', 16, 1, 256),
    hookConcurrency: readInt(env, 'APP_WEBHOOK_HOOK_CONCURRENCY', 2, 1, 256),
    maxPending: readInt(env, 'APP_WEBHOOK_MAX_PENDING', 1000, 1, 1_000_000),
    quota: readInt(env, 'APP_QUOTA_WEBHOOKS', 20, 0, 1_000_000),
    retentionMs: readDuration(env, 'APP_WEBHOOK_RETENTION', '30d', 1),
    retentionCount: readInt(env, 'APP_WEBHOOK_RETENTION_COUNT', 1000, 1, 1_000_000),
    pruneIntervalMs: readDuration(env, 'APP_WEBHOOK_PRUNE_INTERVAL', '1h', 100),
  };
}
