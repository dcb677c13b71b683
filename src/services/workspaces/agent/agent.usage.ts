// What one actor may spend on agents (CONTRACT.md, "One tenant never stalls another"): sessions held
// (APP_QUOTA_SESSIONS) and tokens per UTC day over all sessions (APP_AGENT_DAILY_TOKENS), both counted
// from the tables, admins exempt. Each is checked in the transaction of the write it guards, under the
// actor's lock (Store.lock), so concurrent requests, in one process or two, cannot both pass the check.
// Each turn's tokens are kept as a usage record (agent_usage): the daily limit sums them, and usage
// reports read the same records.
import type { Actor } from '../../../platform/auth/workspace-token';
import type { AppError } from '../../../platform/errors';
import type { Orm } from '../../../platform/store';
import { errorFields, isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import { quotaExceeded } from '../quotas';
import type { AgentConfig } from './agent.config';
import type { Usage } from './agent.model';
import type { AgentRepository } from './agent.repository';

const DAY_MS = 86_400_000;

export function createAgentUsage(deps: { repository: AgentRepository; clock: Clock; config: Pick<AgentConfig, 'quotaSessions' | 'dailyTokens'>; log: Logger }) {
  const { repository, clock, config } = deps;

  /**
   * Runs `write` in the transaction of the check (`refusal`: the 429 when the quota is spent, admins
   * exempt), under `actor`'s quota lock.
   */
  function admit<T>(actor: Actor, refusal: (tx: Orm) => Promise<AppError | undefined>, write: (tx: Orm) => Promise<T>): Promise<T> {
    return repository.underQuotaLock(actor.id, async (tx) => {
      const refused = actor.admin ? undefined : await refusal(tx);
      if (refused) throw refused;
      return write(tx);
    });
  }

  return {
    /** Runs `insert` (the new session) only if `actor` holds fewer than APP_QUOTA_SESSIONS sessions; 429 QUOTA_EXCEEDED otherwise. */
    admitSession<T>(actor: Actor, insert: (tx: Orm) => Promise<T>): Promise<T> {
      return admit(
        actor,
        async (tx) => ((await repository.sessionCount(actor.id, tx)) >= config.quotaSessions ? quotaExceeded('sessions', config.quotaSessions) : undefined),
        insert,
      );
    },

    /**
     * Runs `start` (the turn's messages) only if `actor` has tokens left this UTC day (the stored turns
     * plus `inFlight`, the tokens of its turns still running); 429 QUOTA_EXCEEDED otherwise, and the
     * provider is not called.
     */
    admitTurn<T>(actor: Actor, inFlight: number, start: (tx: Orm) => Promise<T>): Promise<T> {
      return admit(
        actor,
        async (tx) => {
          const now = clock.now();
          const dayStart = new Date(now - (now % DAY_MS)).toISOString();
          return (await repository.tokensSince(actor.id, dayStart, tx)) + inFlight >= config.dailyTokens ? quotaExceeded('dailyTokens', config.dailyTokens) : undefined;
        },
        start,
      );
    },

    /** Records a turn's tokens against `actor`; kept even when the session was deleted meanwhile. */
    async record(turn: { actor: string; sessionId: string; model: string }, usage: Usage) {
      if (usage.totalTokens <= 0) return;
      try {
        await repository.recordUsage({
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

export type AgentUsage = ReturnType<typeof createAgentUsage>;
