// Tool calls that wait for a person (toolApproval). The AI SDK stops a turn at a call whose tool has
// `needsApproval`; what waits is then stored here (agent_approvals), so a decision can come minutes
// later, through any Keel process, and after a restart. A decision, the timeout
// (APP_AGENT_APPROVAL_TIMEOUT) or the end of the turn settles each one exactly once (the first wins).
import type { ToolSet } from 'ai';
import { errorFields, isoNow, type Clock, type Logger } from '../../../platform/runtime';
import type { Approval, DecisionInput, ToolApproval } from './agent.model';
import type { AgentRepository } from './agent.repository';
import type { AgentApprovalRow } from './agent.tables';
import type { Decision, PendingCall } from './agent.turn';
import { WorkspaceErrors } from '../workspaces.errors';

/** Why a turn stopped while calls waited: `suspended` (Keel stops) leaves them pending for the restart. */
export const SUSPENDED = 'suspended';

export const parsePolicy = (json: string): ToolApproval => JSON.parse(json) as ToolApproval;

/** The tools with the AI SDK's `needsApproval` set where the session's policy asks for a person. */
export function withApproval(tools: ToolSet, policy: ToolApproval): ToolSet {
  if (policy === 'never') return tools;
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools)) out[name] = policy === 'always' || policy.includes(name) ? { ...t, needsApproval: true } : t;
  return out;
}

export function approvalView(r: AgentApprovalRow): Approval {
  return { id: r.id, toolCallId: r.toolCallId, name: r.name, input: JSON.parse(r.input), status: r.status, reason: r.reason, createdAt: r.createdAt, expiresAt: r.expiresAt, decidedAt: r.decidedAt };
}

const decisionOf = (r: AgentApprovalRow): Decision =>
  r.status === 'approved' ? { approved: true } : { approved: false, reason: `The call was denied: ${r.reason ?? 'no reason given'}` };

export function createApprovals(deps: { repository: AgentRepository; clock: Clock; timeoutMs: number; log: Logger }) {
  const { repository, clock } = deps;
  /** One waiting turn per session: `check` settles it once nothing of its message is pending. */
  const waiting = new Map<string, { messageId: string; check(): Promise<void> }>();

  async function settle(id: string, status: 'approved' | 'denied', reason: string | null, by: string): Promise<boolean> {
    const ok = await repository.decideApproval(id, { status, reason, decidedBy: by, decidedAt: isoNow(clock) });
    const row = ok ? await repository.approval(id) : undefined;
    if (row) await waiting.get(row.sessionId)?.check();
    return ok;
  }

  return {
    /**
     * Stores the calls (those not stored yet: a resumed turn's are), marks the session
     * `awaiting_approval`, and resolves once every one is decided; rejects when `signal` aborts (a
     * cancel or time limit denies what still waits; a suspension leaves it pending).
     */
    async wait(turn: { sessionId: string; messageId: string; signal: AbortSignal }, calls: PendingCall[], announce: (a: Pick<Approval, 'id' | 'toolCallId' | 'name' | 'input'>) => void) {
      const ids = calls.map((c) => c.approvalId);
      const timers: Timer[] = [];
      const done = Promise.withResolvers<Map<string, Decision>>();
      // Handled: it may reject (an abort) before it is awaited below.
      done.promise.catch(() => undefined);
      const check = async () => {
        const rows = (await Promise.all(ids.map((id) => repository.approval(id)))).filter((r): r is AgentApprovalRow => !!r);
        // Not all stored yet (a decision came while `wait` stores them): the check at its end settles.
        if (rows.length < ids.length || rows.some((r) => r.status === 'pending')) return;
        done.resolve(new Map(rows.map((r) => [r.id, decisionOf(r)])));
      };
      const onAbort = async () => {
        try {
          if (turn.signal.reason !== SUSPENDED) {
            for (const id of ids) await repository.decideApproval(id, { status: 'denied', reason: 'the turn ended before a decision', decidedBy: 'keel', decidedAt: isoNow(clock) });
          }
        } catch (e) {
          deps.log.warn('agent approvals not denied at the end of their turn', { session: turn.sessionId, ...errorFields(e) });
        } finally {
          done.reject(new Error('turn stopped while waiting for approval'));
        }
      };
      const listener = () => void onAbort();
      // Waiting (decisions accepted) before anything is announced: a client may decide as soon as it sees the event.
      waiting.set(turn.sessionId, { messageId: turn.messageId, check });
      try {
        const now = clock.now();
        const announced: Parameters<typeof announce>[0][] = [];
        for (const c of calls) {
          if (await repository.approval(c.approvalId)) continue;
          await repository.insertApproval({
            id: c.approvalId,
            sessionId: turn.sessionId,
            messageId: turn.messageId,
            toolCallId: c.id,
            name: c.name,
            input: JSON.stringify(c.input ?? null),
            status: 'pending',
            reason: null,
            decidedBy: null,
            createdAt: new Date(now).toISOString(),
            expiresAt: new Date(now + deps.timeoutMs).toISOString(),
            decidedAt: null,
          });
          announced.push({ id: c.approvalId, toolCallId: c.id, name: c.name, input: c.input ?? null });
        }
        await repository.setStatus(turn.sessionId, 'awaiting_approval');
        for (const a of announced) announce(a);
        for (const id of ids) {
          const row = await repository.approval(id);
          if (row?.status !== 'pending') continue;
          // Timers count from the stored expiry, so a restart neither resets nor loses them.
          const left = Math.max(0, Date.parse(row.expiresAt) - clock.now());
          const reason = `no decision within ${Math.round(deps.timeoutMs / 1000)} s (APP_AGENT_APPROVAL_TIMEOUT)`;
          const expire = () =>
            void settle(id, 'denied', reason, 'keel').catch((e) => deps.log.warn('agent approval timeout not stored', { session: turn.sessionId, approval: id, ...errorFields(e) }));
          timers.push(setTimeout(expire, left));
        }
        // The signal may have aborted while the calls were stored.
        if (turn.signal.aborted) listener();
        else turn.signal.addEventListener('abort', listener, { once: true });
        await check();
        return await done.promise;
      } finally {
        turn.signal.removeEventListener('abort', listener);
        for (const t of timers) clearTimeout(t);
        waiting.delete(turn.sessionId);
        await repository.setStatus(turn.sessionId, 'active');
      }
    },

    async list(sessionId: string, all: boolean): Promise<Approval[]> {
      return (await repository.approvals(sessionId, !all)).map(approvalView);
    },

    /** A person's decision; the session was checked to be the caller's. */
    async decide(sessionId: string, aid: string, by: string, input: DecisionInput): Promise<Approval> {
      const row = await repository.approval(aid);
      if (!row || row.sessionId !== sessionId) throw WorkspaceErrors.APPROVAL_NOT_FOUND('approval not found in this session');
      if (row.status !== 'pending' || !waiting.has(sessionId)) {
        throw WorkspaceErrors.APPROVAL_DECIDED('this approval is not waiting for a decision any more', { id: aid, status: row.status });
      }
      const status = input.decision === 'approve' ? 'approved' : 'denied';
      if (!(await settle(aid, status, input.decision === 'deny' ? (input.reason ?? null) : null, by))) {
        throw WorkspaceErrors.APPROVAL_DECIDED('this approval is not waiting for a decision any more', { id: aid, status: (await repository.approval(aid))?.status ?? 'denied' });
      }
      return approvalView((await repository.approval(aid))!);
    },

    /** Messages of turns paused for approval (to take up again at start-up). */
    async pendingMessages(sessionId: string): Promise<Set<string>> {
      return new Set((await repository.approvals(sessionId, true)).map((r) => r.messageId));
    },
  };
}

export type Approvals = ReturnType<typeof createApprovals>;
