// Limits of agent sessions and how providers are reached, read once from the environment
// (a bad value stops start-up naming the variable). Provider variables are those of the vendors' SDKs.
import { readInt, type Env } from '../../../platform/config';

export interface AgentConfig {
  /** Model calls per message (each tool round trip is one more); past it the turn ends with `step-limit`. */
  maxSteps: number;
  /** Tokens (prompt + completion) a session may spend over all its turns; past it: `token-limit`. */
  maxSessionTokens: number;
  /** Wall time of one turn in milliseconds, tools included; past it: `time-limit`. */
  turnTimeoutMs: number;
  /** Retries of a failing provider call (429, 5xx, network) before the turn fails with UPSTREAM_ERROR. */
  providerRetries: number;
  /** Silence of a provider (no headers, no chunk) after which its call fails with UPSTREAM_ERROR. */
  providerTimeoutMs: number;
  /** Sessions one actor may hold (APP_QUOTA_SESSIONS; admins exempt); past it creating one answers 429. */
  quotaSessions: number;
  /** Tokens one actor may spend per UTC day over all sessions (APP_AGENT_DAILY_TOKENS; admins exempt); past it a new turn answers 429. */
  dailyTokens: number;
  /** A tool call undecided this long (APP_AGENT_APPROVAL_TIMEOUT, seconds) is denied. */
  approvalTimeoutMs: number;
  /** Connecting to a session's MCP server, listing its tools, or one call (APP_AGENT_MCP_TIMEOUT_MS). */
  mcpTimeoutMs: number;
  providers: ProviderSettings;
}

export interface ProviderSettings {
  openai?: { apiKey: string; baseURL?: string };
  anthropic?: { apiKey: string; baseURL?: string };
}

export const AGENT_DEFAULTS = {
  maxSteps: 20,
  maxSessionTokens: 1_000_000,
  turnTimeoutMs: 600_000,
  providerRetries: 2,
  providerTimeoutMs: 120_000,
  quotaSessions: 50,
  dailyTokens: 2_000_000,
  approvalTimeoutSeconds: 3600,
  mcpTimeoutMs: 30_000,
} as const;

const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

/** A provider is configured by its key, or (OpenAI-compatible servers that need none) by its base URL. */
export function readProviders(env: Env): ProviderSettings {
  const out: ProviderSettings = {};
  const oKey = nonEmpty(env.OPENAI_API_KEY);
  const oUrl = nonEmpty(env.OPENAI_BASE_URL);
  if (oKey || oUrl) out.openai = { apiKey: oKey ?? '', baseURL: oUrl };
  const aKey = nonEmpty(env.ANTHROPIC_API_KEY);
  const aUrl = nonEmpty(env.ANTHROPIC_BASE_URL);
  if (aKey || aUrl) out.anthropic = { apiKey: aKey ?? '', baseURL: aUrl };
  return out;
}

export function loadAgentConfig(env: Env = process.env): AgentConfig {
  return {
    maxSteps: readInt(env, 'APP_AGENT_MAX_STEPS', AGENT_DEFAULTS.maxSteps, 1, 1000),
    maxSessionTokens: readInt(env, 'APP_AGENT_MAX_SESSION_TOKENS', AGENT_DEFAULTS.maxSessionTokens, 1, 1_000_000_000),
    turnTimeoutMs: readInt(env, 'APP_AGENT_TURN_TIMEOUT_MS', AGENT_DEFAULTS.turnTimeoutMs, 100, 86_400_000),
    providerRetries: readInt(env, 'APP_AGENT_PROVIDER_RETRIES', AGENT_DEFAULTS.providerRetries, 0, 10),
    providerTimeoutMs: readInt(env, 'APP_AGENT_PROVIDER_TIMEOUT_MS', AGENT_DEFAULTS.providerTimeoutMs, 100, 3_600_000),
    quotaSessions: readInt(env, 'APP_QUOTA_SESSIONS', AGENT_DEFAULTS.quotaSessions, 0, 1_000_000),
    dailyTokens: readInt(env, 'APP_AGENT_DAILY_TOKENS', AGENT_DEFAULTS.dailyTokens, 0, 1_000_000_000_000),
    approvalTimeoutMs: readInt(env, 'APP_AGENT_APPROVAL_TIMEOUT', AGENT_DEFAULTS.approvalTimeoutSeconds, 1, 30 * 86_400) * 1000,
    mcpTimeoutMs: readInt(env, 'APP_AGENT_MCP_TIMEOUT_MS', AGENT_DEFAULTS.mcpTimeoutMs, 100, 600_000),
    providers: readProviders(env),
  };
}
