// What one actor may spend on agents (CONTRACT.md, "One tenant never stalls another"): sessions held
// (APP_QUOTA_SESSIONS) and tokens per UTC day over all sessions (APP_AGENT_DAILY_TOKENS), both counted
// from the tables, admins exempt. Each turn's tokens are kept as a usage record (agent_usage): the
// daily limit sums them, and usage reports read the same records.
import type { Actor } from '../../../platform/auth/workspace-token';
import { errorFields, isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import { quotaExceeded } from '../quotas';
import type { AgentConfig } from './agent.config';
import type { Usage } from './agent.model';
import type { AgentStore } from './agent.store';

const DAY_MS = 86_400_000;

export function createAgentUsage(deps: { store: AgentStore; clock: Clock; config: Pick<AgentConfig, 'quotaSessions' | 'dailyTokens'>; log: Logger }) {
  const { store, clock, config } = deps;
  return {
    /** 429 QUOTA_EXCEEDED when `actor` holds APP_QUOTA_SESSIONS sessions already. Synchronous: run it right before the insert. */
    checkSessions(actor: Actor) {
      if (!actor.admin && store.sessionCount(actor.id) >= config.quotaSessions) throw quotaExceeded('sessions', config.quotaSessions);
    },

    /**
     * 429 QUOTA_EXCEEDED when `actor` has spent its tokens of the current UTC day (the stored turns plus
     * `inFlight`, the tokens of its turns still running). Checked before a turn starts: the provider is not called.
     */
    checkDaily(actor: Actor, inFlight: number) {
      if (actor.admin) return;
      const now = clock.now();
      const dayStart = new Date(now - (now % DAY_MS)).toISOString();
      if (store.tokensSince(actor.id, dayStart) + inFlight >= config.dailyTokens) throw quotaExceeded('dailyTokens', config.dailyTokens);
    },

    /** Records a turn's tokens against `actor`; kept even when the session was deleted meanwhile. */
    record(turn: { actor: string; sessionId: string; model: string }, usage: Usage) {
      if (usage.totalTokens <= 0) return;
      try {
        store.recordUsage({
          id: newId('use', clock),
          actor: turn.actor,
          sessionId: turn.sessionId,
          model: turn.model,
          inputTokens: usage.promptTokens,
          outputTokens: usage.completionTokens,
          at: isoNow(clock),
        });
      } catch (e) {
        deps.log.warn('agent usage not stored', { session: turn.sessionId, ...errorFields(e) });
      }
    },
  };
}
