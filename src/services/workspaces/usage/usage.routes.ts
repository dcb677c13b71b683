// HTTP of usage reports.
import { Elysia } from 'elysia';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { workspaceOperation as op } from '../workspaces.errors';
import { UsageQuery, UsageReport } from './usage.model';
import type { Usage } from './usage.service';

export function usageRoutes(deps: { auth: WorkspaceAuthPlugin; usage: Usage }) {
  return new Elysia({ name: 'workspaces.usage' })
    .use(deps.auth)
    .get('/api/usage', ({ actor, query }) => deps.usage.report(actor, query), {
      query: UsageQuery,
      response: { 200: UsageReport },
      detail: { ...op('getUsage', ['FORBIDDEN']),
        tags: ['usage'],
        summary: "An actor's usage over a time range: tokens by model, command seconds, workspace running minutes",
        description:
          'Default range: the current UTC day. `from` and `to` take ISO dates (`to=2026-11-30` includes that day) or UTC times. ' +
          'Tokens are those of agent turns that ended in the range (the records APP_AGENT_DAILY_TOKENS sums); execSeconds the wall time of commands that ended in it; ' +
          "runningMinutes the part of the range the actor's workspaces were running. `actor` (admins only) reads another actor's usage. `to` must come after `from`.",
      },
    });
}
