// Schemas of GET /api/usage.
import { t, type Static } from 'elysia';

const DAY_OR_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?Z)?$';

export const UsageQuery = t.Object({
  from: t.Optional(t.String({ pattern: DAY_OR_TIME, description: 'ISO date (`2026-11-01`, from its start) or UTC time (`2026-11-01T08:00:00Z`); default: the start of the current UTC day' })),
  to: t.Optional(t.String({ pattern: DAY_OR_TIME, description: 'ISO date (up to the end of that day) or UTC time (up to that instant); default: the end of the current UTC day' })),
  actor: t.Optional(t.String({ minLength: 1, maxLength: 256, description: "admins: whose usage (default: the caller's); others may name only themselves" })),
});
export type UsageQuery = Static<typeof UsageQuery>;

const Tokens = t.Object({ promptTokens: t.Integer({ minimum: 0 }), completionTokens: t.Integer({ minimum: 0 }), totalTokens: t.Integer({ minimum: 0 }) });

export const UsageReport = t.Object(
  {
    actor: t.String(),
    from: t.String({ description: 'ISO 8601 UTC, included' }),
    to: t.String({ description: 'ISO 8601 UTC, excluded' }),
    tokens: t.Object({
      byModel: t.Record(t.String(), Tokens, { description: 'per `provider/name`: the tokens of agent turns that ended in the range' }),
      total: t.Integer({ minimum: 0, description: 'the sum of every model\'s totalTokens (what APP_AGENT_DAILY_TOKENS counts)' }),
    }),
    execSeconds: t.Number({ minimum: 0, description: 'wall time of the commands the actor ran (exec, streaming exec, agent tools) that ended in the range' }),
    runningMinutes: t.Number({ minimum: 0, description: "time the actor's workspaces ran within the range, summed over workspaces" }),
  },
  { description: "One actor's usage over a time range" },
);
export type UsageReport = Static<typeof UsageReport>;
