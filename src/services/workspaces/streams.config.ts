// The variable every SSE stream of the service shares (log follow, streaming exec, agent turns, the
// event stream), parsed once (a bad value stops start-up naming it).
import { readInt, type Env } from '../../platform/config';
import { HEARTBEAT_MAX_MS, HEARTBEAT_MIN_MS } from '../../platform/http/sse';

export interface StreamsConfig {
  /**
   * Milliseconds of silence before a `: keep-alive` comment on an SSE stream; at most
   * HEARTBEAT_MAX_MS, well inside the server's idle timeout.
   */
  heartbeatMs: number;
}

export function loadStreamsConfig(env: Env): StreamsConfig {
  return { heartbeatMs: readInt(env, 'APP_WORKSPACE_SSE_HEARTBEAT_MS', 15_000, HEARTBEAT_MIN_MS, HEARTBEAT_MAX_MS) };
}
