// HTTP wiring of agent sessions: JSON answers, and the SSE answers (message stream, event log) made
// by the platform's SSE adapter from the service's AsyncIterable of events (each with its `id:`).
import { Elysia } from 'elysia';
import { lastEventId, type Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { strictObjects } from '../../../platform/http/strict-objects';
import {
  AgentEventStream,
  Approval,
  ApprovalList,
  ApprovalParams,
  ApprovalsQuery,
  DecisionBody,
  AssistantReply,
  CancelAnswer,
  CreateSessionBody,
  DeleteAnswer,
  EventsQuery,
  FINISH_REASONS,
  ListQuery,
  SendMessageBody,
  Session,
  SessionList,
  SessionParams,
  type AssistantReply as AssistantReplyT,
} from './agent.model';
import type { AgentService } from './agent.service';
import type { AgentConfig } from './agent.config';
import { WorkspaceErrors, workspaceOperation as op } from '../workspaces.errors';

/** `Last-Event-ID` (wins) or `?after=N`; 0 replays the whole log. */
function resumePoint(header: string | undefined, after: number | undefined): number {
  if (header === undefined) return after ?? 0;
  if (!/^\d{1,15}$/.test(header)) throw WorkspaceErrors.INVALID_REQUEST('Last-Event-ID must be an event id (a whole number)', { header: 'last-event-id' });
  return Number(header);
}

/**
 * The SSE answers: no backlog option, so events are read as the client reads (they come from the log
 * and the turn's memory; a slow client holds back only itself), and no shutdown event: the turn then
 * ends as `interrupted` in the log, which a client resumes from once Keel is back.
 */
export function agentRoutes(deps: { auth: WorkspaceAuthPlugin; agent: AgentService; config: AgentConfig; sse: Sse }) {
  const { agent } = deps;
  const limits =
    `Limits: ${deps.config.maxSteps} model calls per message (APP_AGENT_MAX_STEPS; then finishReason \`step-limit\`), ` +
    `${deps.config.maxSessionTokens} tokens per session (APP_AGENT_MAX_SESSION_TOKENS; \`token-limit\`), ` +
    `${deps.config.turnTimeoutMs} ms per turn (APP_AGENT_TURN_TIMEOUT_MS; \`time-limit\`). A limit ends the turn with its done event, never an error.`;
  return new Elysia({ name: 'workspaces.agent' })
    .use(deps.auth)
    .post('/api/agent/sessions', async ({ body, actor, set }) => {
      const s = await agent.create(actor, body);
      set.status = 201;
      set.headers.location = `/api/agent/sessions/${s.id}`;
      return s;
    }, {
      body: CreateSessionBody,
      // `context: false` would otherwise be cleaned into `{}` before the check (strict-objects.ts).
      transform: strictObjects(CreateSessionBody),
      response: { 201: Session },
      detail: { ...op('createAgentSession', ['WORKSPACE_NOT_FOUND', 'QUOTA_EXCEEDED']),
        tags: ['agent'],
        summary: 'Create an agent session bound to a workspace',
        description:
          'Answers 201 with `Location: /api/agent/sessions/{id}`. The session belongs to the caller; `workspaceId` must be a workspace the caller may see. `context` (optional) is shown to the model on every turn. `toolApproval` (optional) names the tool calls that wait for a person (GET/POST .../approvals); `mcpServers` (optional) adds the tools of those MCP servers as `<name>__<tool>` (URLs as webhook targets; a literal address Keel may not reach is 400).\n\n' +
          'A `model` whose provider is not configured is refused: the message and `details.configured` name the configured ones. ' +
          'A caller holding APP_QUOTA_SESSIONS sessions already gets `QUOTA_EXCEEDED` with `details: {quota: "sessions", limit}` (admin tokens are exempt).',
      },
    })
    .get('/api/agent/sessions', async ({ actor, query }) => ({ sessions: await agent.list(actor, query) }), {
      query: ListQuery,
      response: { 200: SessionList },
      detail: { ...op('listAgentSessions'), tags: ['agent'], summary: "The caller's sessions (admins: all), oldest first, without messages; `workspaceId` narrows to one workspace" },
    })
    .get('/api/agent/sessions/:id', ({ params, actor }) => agent.get(actor, params.id), {
      params: SessionParams,
      response: { 200: Session },
      detail: { ...op('getAgentSession', ['SESSION_NOT_FOUND']),
        tags: ['agent'],
        summary: 'A session with its full history',
        description: "Assistant messages carry finishReason (null while their turn runs), usage and toolCalls. Another actor's session is 404 SESSION_NOT_FOUND.",
      },
    })
    .delete('/api/agent/sessions/:id', ({ params, actor }) => agent.remove(actor, params.id), {
      params: SessionParams,
      response: { 200: DeleteAnswer },
      detail: { ...op('deleteAgentSession', ['SESSION_NOT_FOUND']), tags: ['agent'], summary: 'Delete a session, its messages and its event log (a turn in flight is cancelled first)' },
    })
    .post(
      '/api/agent/sessions/:id/messages',
      async ({ params, body, actor, request }) => {
        if (body.stream) {
          const stream = deps.sse.open(request);
          const turn = await agent.send(actor, params.id, body.message, stream.signal);
          // A Response passes through Elysia unvalidated; the cast only satisfies the JSON 200 schema's type.
          return stream.respond(turn.follow(stream.signal)) as unknown as AssistantReplyT;
        }
        const { reply, error } = await (await agent.send(actor, params.id, body.message)).result;
        if (error) throw error;
        return reply;
      },
      {
        params: SessionParams,
        body: SendMessageBody,
        response: { 200: AssistantReply },
        detail: { ...op('sendAgentMessage', ['SESSION_NOT_FOUND', 'SESSION_BUSY', 'WORKSPACE_NOT_RUNNING', 'QUOTA_EXCEEDED', 'INTERNAL_ERROR', 'UPSTREAM_ERROR', 'SHUTTING_DOWN']),
          tags: ['agent'],
          summary: 'Send a message; the assistant may act in the workspace through tools',
          description:
            'Tools offered to the model: `run_command` (required `command`; optional `workdir`, `timeout` in ms; runs like POST /api/workspaces/{id}/exec), `read_file`, `write_file`, ' +
            '`list_directory`, all inside the bound workspace. A workspace that is not running makes a tool answer an `error` the model reads; the turn goes on.\n\n' +
            'Without `stream` the answer is the Assistant reply once the turn ends. With `stream: true` it is text/event-stream (see the 200 response). ' +
            'Either way the turn runs to its end when the client leaves, and its events stay in the log (GET .../events).\n\n' +
            'Quotas per caller (admin tokens are exempt): a turn, streaming or not, holds one of its APP_QUOTA_STREAMS slots until it has ended and its stream closed; ' +
            'each command a tool runs holds one of its APP_QUOTA_EXECS slots until it is gone (past it the tool result is an `error` with `code: QUOTA_EXCEEDED` and the turn goes on); ' +
            'a turn starts only while the caller has spent fewer than APP_AGENT_DAILY_TOKENS tokens this UTC day over all its sessions.\n\n' +
            `\`finishReason\`: ${FINISH_REASONS.join(', ')}. ${limits}\n\n` +
            'A refused turn starts nothing: `QUOTA_EXCEEDED` has `details.quota` `streams` (the caller\'s APP_QUOTA_STREAMS slots are taken) or `dailyTokens` ' +
            '(the caller has spent APP_AGENT_DAILY_TOKENS tokens this UTC day); a `model` whose provider is not configured is refused. ' +
            '`UPSTREAM_ERROR` carries the provider\'s status and reason, never credentials (with `stream: true` it is the `error` event). ' +
            'While Keel stops, turns in flight end as `interrupted`.',
          responses: { 200: AgentEventStream('The Assistant reply; with `stream: true` a text/event-stream') },
        },
      },
    )
    .get(
      '/api/agent/sessions/:id/events',
      async ({ params, query, actor, request }) => {
        const after = resumePoint(lastEventId(request), query.after);
        const stream = deps.sse.open(request);
        return stream.respond(await agent.events(actor, params.id, after, stream.signal));
      },
      {
        params: SessionParams,
        query: EventsQuery,
detail: { ...op('streamAgentEvents', ['SESSION_NOT_FOUND', 'QUOTA_EXCEEDED']),
          tags: ['agent'],
          summary: "Replay the session's events and follow the turn in flight",
          description:
            'Replays every stored event whose id is greater than `Last-Event-ID` (or `?after=N`; default 0: all), then follows the turn in flight and ends after its ' +
            '`done` or `error` event; ends at once when no turn is in flight. Reconnect with the last id you saw to miss nothing and get nothing twice. ' +
            'The stream holds one of the caller\'s APP_QUOTA_STREAMS slots while open (429 QUOTA_EXCEEDED past it).',
          responses: { 200: AgentEventStream('The events, as text/event-stream') },
        },
      },
    )
    .post('/api/agent/sessions/:id/cancel', ({ params, actor }) => agent.cancel(actor, params.id), {
      params: SessionParams,
      response: { 200: CancelAnswer },
      detail: { ...op('cancelAgentTurn', ['SESSION_NOT_FOUND']),
        tags: ['agent'],
        summary: 'Stop the turn in flight',
        description:
          'Aborts the provider call and kills a running command (its whole process group), then answers once the turn has ended with a `done` whose ' +
          '`finishReason` is `cancelled` (partial content and usage kept). `cancelled: false` when no turn was in flight.',
      },
    })
    .get('/api/agent/sessions/:id/approvals', async ({ params, query, actor }) => ({ approvals: await agent.approvals(actor, params.id, query.status === 'all') }), {
      params: SessionParams,
      query: ApprovalsQuery,
      response: { 200: ApprovalList },
      detail: { ...op('listAgentApprovals', ['SESSION_NOT_FOUND']),
        tags: ['agent'],
        summary: 'Tool calls waiting for a decision (toolApproval)',
        description:
          'The calls of the turn in flight that wait for a person, oldest first (`?status=all`: decided ones too). While one waits the session\'s status is `awaiting_approval` ' +
          'and its stream has sent an `approval` event. Undecided after APP_AGENT_APPROVAL_TIMEOUT seconds (default 3600) a call is denied. Another actor\'s session is 404 SESSION_NOT_FOUND.',
      },
    })
    .post('/api/agent/sessions/:id/approvals/:aid', ({ params, body, actor }) => agent.decide(actor, params.id, params.aid, body), {
      params: ApprovalParams,
      body: DecisionBody,
      response: { 200: Approval },
      detail: { ...op('decideAgentApproval', ['SESSION_NOT_FOUND', 'APPROVAL_NOT_FOUND', 'APPROVAL_DECIDED']),
        tags: ['agent'],
        summary: 'Approve or deny a waiting tool call',
        description:
          '`approve`: the call runs and the turn goes on. `deny`: the call does not run; the model reads a tool result saying it was denied, with `reason`, and the turn goes on. ' +
          'Answers the decided approval.',
      },
    });
}
