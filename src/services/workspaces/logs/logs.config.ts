// Environment variables of logs and exec, parsed once (a bad value stops start-up naming it).
import { readInt, type Env } from '../../../platform/config';

export interface LogsExecConfig {
  /** Milliseconds between `: keep-alive` comments on idle SSE streams (log follow, streaming exec). */
  heartbeatMs: number;
}

export function loadLogsExecConfig(env: Env = process.env): LogsExecConfig {
  return { heartbeatMs: readInt(env, 'APP_WORKSPACE_SSE_HEARTBEAT_MS', 15_000, 100, 300_000) };
}
