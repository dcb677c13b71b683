// Schemas of the agent-session API: request bodies, the views, and the SSE protocol's description.
import { t, type Static } from 'elysia';
import { ErrorEnvelope } from '../../../platform/http/errors';

/**
 * Unknown fields are refused, not dropped: Elysia's normalisation strips properties a schema does not
 * name when `additionalProperties` is false, but keeps and checks them against a schema, here one that
 * nothing matches. A misspelt `sytem` in a context is an error, never a silently ignored prompt.
 */
const strict = { additionalProperties: t.Never() } as const;

export const MESSAGE_MAX_CHARS = 100_000;

/**
 * How a turn ended. The provider's own reasons (`stop`, `length`, `content-filter`, `tool-calls`,
 * `other`), then Keel's: a cancel, one of the three limits, a crash or shutdown, or a failure.
 */
export const FINISH_REASONS = ['stop', 'length', 'content-filter', 'tool-calls', 'other', 'cancelled', 'step-limit', 'token-limit', 'time-limit', 'interrupted', 'error'] as const;
export type FinishReason = (typeof FINISH_REASONS)[number];

export const AgentContext = t.Object(
  {
    system: t.Optional(t.String({ maxLength: 32_768, description: 'system prompt, placed after Keel\'s own (which names the workspace and its tools)' })),
    instructions: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 4096 }), { maxItems: 50, description: 'rules the model is given as a list on every turn' }),
    ),
    notes: t.Optional(
      t.Record(t.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), t.String({ maxLength: 8192 }), {
        maxProperties: 50,
        description: 'named facts (`{"repo": "api server in /workspace/api"}`) the model sees on every turn',
      }),
    ),
  },
  {
    ...strict,
    description: 'What the model sees on every turn, as system text: `system`, then `instructions` as a list, then `notes` as `name: value` lines. Unknown fields are refused.',
  },
);
export type AgentContext = Static<typeof AgentContext>;

export const TOOL_NAME_PATTERN = '^[A-Za-z0-9_-]{1,128}$';

export const ToolApproval = t.Union(
  [
    t.Literal('never'),
    t.Literal('always'),
    t.Array(t.String({ pattern: TOOL_NAME_PATTERN }), { minItems: 1, maxItems: 100, uniqueItems: true }),
  ],
  {
    description:
      'Which tool calls wait for a person\'s decision before they run: `never` (default), `always`, or the names of the tools (e.g. `["run_command", "write_file"]`). ' +
      'A waiting call pauses the turn (session status `awaiting_approval`, an `approval` event) until POST .../approvals/{aid} decides it.',
  },
);
export type ToolApproval = Static<typeof ToolApproval>;

export const McpServer = t.Object(
  {
    name: t.String({ pattern: '^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$', maxLength: 32, description: 'its tools are offered as `<name>__<tool>` (letters, digits, `-`, single `_`)' }),
    url: t.String({ minLength: 8, maxLength: 2048, description: 'Streamable HTTP endpoint, http(s); the rules of webhook targets apply (never metadata, link-local, a workspace network or Keel\'s own ports)' }),
    headers: t.Optional(t.Record(t.String({ pattern: '^[A-Za-z0-9-]{1,64}$' }), t.String({ maxLength: 4096 }), { maxProperties: 20, description: 'sent with every request (e.g. Authorization); never shown back' })),
  },
  strict,
);
export type McpServer = Static<typeof McpServer>;

export const CreateSessionBody = t.Object(
  {
    workspaceId: t.String({ minLength: 1, maxLength: 128, description: 'a workspace the caller owns (it need not be running yet)' }),
    model: t.String({
      minLength: 3,
      maxLength: 256,
      pattern: '^[a-z0-9-]+/[^\\s]+$',
      description: '`provider/name`: `openai/gpt-4o-mini`, `anthropic/claude-sonnet-4-5`, or an OpenAI-compatible server\'s model through `openai/...` with OPENAI_BASE_URL',
    }),
    context: t.Optional(AgentContext),
    toolApproval: t.Optional(ToolApproval),
    mcpServers: t.Optional(t.Array(McpServer, { maxItems: 8, description: "MCP servers whose tools the model may call, under the session's toolApproval" })),
  },
  { ...strict, examples: [{ workspaceId: 'ws_1m8k2x9q', model: 'openai/gpt-4o-mini' }] },
);
export type CreateSessionInput = Static<typeof CreateSessionBody>;

export const SendMessageBody = t.Object(
  {
    message: t.String({ minLength: 1, maxLength: MESSAGE_MAX_CHARS }),
    stream: t.Optional(t.Boolean({ default: false, description: 'true: answer text/event-stream (see the 200 response)' })),
  },
  { ...strict, examples: [{ message: 'List the files in /workspace and say what the project is', stream: true }] },
);

export const ListQuery = t.Object({
  workspaceId: t.Optional(t.String({ minLength: 1, maxLength: 128, description: 'only the sessions bound to this workspace' })),
});
export const SessionParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });
export const EventsQuery = t.Object({
  after: t.Optional(t.Integer({ minimum: 0, description: 'replay events whose id is greater; the Last-Event-ID header wins when both are given' })),
});

export const Usage = t.Object({
  promptTokens: t.Integer({ minimum: 0 }),
  completionTokens: t.Integer({ minimum: 0 }),
  totalTokens: t.Integer({ minimum: 0 }),
});
export type Usage = Static<typeof Usage>;

export const ToolCall = t.Object(
  {
    id: t.String(),
    name: t.String({ description: 'run_command, read_file, write_file or list_directory' }),
    input: t.Unknown({ description: 'the arguments the model gave' }),
    output: t.Unknown({ description: 'what the tool answered the model (an `error` field when it could not act)' }),
  },
  { description: 'One action in the workspace and its result; also the data of a `tool` event' },
);
export type ToolCall = Static<typeof ToolCall>;

const FinishReasonSchema = t.String({ description: `one of ${FINISH_REASONS.join(', ')}` });

export const AssistantReply = t.Object(
  {
    id: t.String(),
    role: t.Literal('assistant'),
    content: t.String({ description: 'all text of the turn; equals the joined `delta` contents' }),
    finishReason: FinishReasonSchema,
    usage: t.Object(Usage.properties, { description: 'sums every provider call of the turn, tool steps included' }),
    toolCalls: t.Array(ToolCall),
  },
  { description: 'The Assistant reply; also the data of the `done` event' },
);
export type AssistantReply = Static<typeof AssistantReply>;

export const Message = t.Object({
  id: t.String(),
  role: t.Union([t.Literal('user'), t.Literal('assistant')]),
  content: t.String(),
  timestamp: t.String({ description: 'ISO 8601 UTC' }),
  finishReason: t.Optional(t.Union([FinishReasonSchema, t.Null()], { description: 'assistant: null while its turn runs' })),
  usage: t.Optional(Usage),
  toolCalls: t.Optional(t.Array(ToolCall)),
});
export type Message = Static<typeof Message>;

const sessionFields = {
  id: t.String(),
  workspaceId: t.String(),
  model: t.String(),
  status: t.Union([t.Literal('active'), t.Literal('awaiting_approval')], { description: '`awaiting_approval` while a tool call of the turn in flight waits for a decision' }),
  toolApproval: ToolApproval,
  mcpServers: t.Array(t.Object({ name: t.String(), url: t.String() }), { description: 'the session\'s MCP servers (their headers are not shown)' }),
  createdAt: t.String({ description: 'ISO 8601 UTC' }),
  usage: t.Object(Usage.properties, { description: 'totals over every turn of the session' }),
  busy: t.Boolean({ description: 'a turn is in flight (follow it with GET .../events)' }),
  lastEventId: t.Integer({ minimum: 0, description: 'id of the last stored event (0: none yet)' }),
};

export const Session = t.Object({ ...sessionFields, context: AgentContext, messages: t.Array(Message) });
export type Session = Static<typeof Session>;
export const SessionListEntry = t.Object({ ...sessionFields, messageCount: t.Integer({ minimum: 0 }) });
export type SessionListEntry = Static<typeof SessionListEntry>;
export const SessionList = t.Object({ sessions: t.Array(SessionListEntry) });
export const CancelAnswer = t.Object({ id: t.String(), cancelled: t.Boolean({ description: 'true when a turn was in flight and is now ended' }) });
export const Approval = t.Object(
  {
    id: t.String({ description: 'the approval id: decide it with POST /api/agent/sessions/{id}/approvals/{aid}' }),
    toolCallId: t.String(),
    name: t.String({ description: 'the tool the model called' }),
    input: t.Unknown({ description: 'the arguments the model gave' }),
    status: t.Union([t.Literal('pending'), t.Literal('approved'), t.Literal('denied')]),
    reason: t.Union([t.String(), t.Null()], { description: 'denied: the reason the model was given' }),
    createdAt: t.String({ description: 'ISO 8601 UTC' }),
    expiresAt: t.String({ description: 'ISO 8601 UTC: undecided by then, the call is denied (APP_AGENT_APPROVAL_TIMEOUT)' }),
    decidedAt: t.Union([t.String(), t.Null()]),
  },
  { description: 'A tool call that waits for (or was given) a decision; `{id, toolCallId, name, input}` is also the data of an `approval` event' },
);
export type Approval = Static<typeof Approval>;
export const ApprovalList = t.Object({ approvals: t.Array(Approval) });
export const ApprovalParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }), aid: t.String({ minLength: 1, maxLength: 128 }) });
export const ApprovalsQuery = t.Object({
  status: t.Optional(t.Union([t.Literal('pending'), t.Literal('all')], { default: 'pending', description: '`pending` (default): what waits; `all`: decided ones too' })),
});
export const DecisionBody = t.Object(
  {
    decision: t.Union([t.Literal('approve'), t.Literal('deny')]),
    reason: t.Optional(t.String({ minLength: 1, maxLength: 2000, description: 'deny: told to the model as the tool\'s result' })),
  },
  strict,
);
export type DecisionInput = Static<typeof DecisionBody>;

export const DeleteAnswer = t.Object({ id: t.String(), deleted: t.Literal(true) });

/** One event of the session's log, as the service yields it and SSE sends it. */
export interface AgentEvent {
  id: number;
  event: 'delta' | 'tool' | 'approval' | 'done' | 'error';
  data: unknown;
}

const eventId = t.String({ pattern: '^[0-9]+$', description: 'the `id:` line: a number increasing within the session (resume with Last-Event-ID)' });

/** The events of an agent stream as data: what a client reads from each `event:`, `id:` and `data:`. */
export const AgentEventSchema = t.Union(
  [
    t.Object({ event: t.Literal('delta'), id: eventId, data: t.Object({ content: t.String({ description: 'text as it arrives' }) }) }),
    t.Object({ event: t.Literal('tool'), id: eventId, data: ToolCall }),
    t.Object({
      event: t.Literal('approval'),
      id: eventId,
      data: t.Object(
        {
          id: t.String({ description: 'the approval id: decide with POST /api/agent/sessions/{id}/approvals/{aid}' }),
          toolCallId: t.String(),
          name: t.String({ description: 'the tool' }),
          input: t.Unknown({ description: 'what the model asked the tool to do' }),
        },
        { description: 'a tool call waiting for a decision (toolApproval); the stream stays open meanwhile' },
      ),
    }),
    t.Object({ event: t.Literal('done'), id: eventId, data: AssistantReply }),
    t.Object({ event: t.Literal('error'), id: eventId, data: ErrorEnvelope }),
  ],
  { description: 'One Server-Sent Event of an agent stream: `event` is its event line, `id` its id line, `data` the JSON of its data line' },
);

const STREAM_TEXT =
  'Server-Sent Events, each with an `id:` line increasing within the session: `event: delta` with data `{"content": "..."}` as text arrives, ' +
  '`event: tool` with data `{"id", "name", "input", "output"}` once the agent acted in the workspace, ' +
  '`event: approval` with data `{"id", "toolCallId", "name", "input"}` when a call waits for a decision (the stream stays open meanwhile), then exactly one `event: done` ' +
  '(data: the Assistant reply, `finishReason` saying why it ended) or `event: error` (data: the error body, e.g. UPSTREAM_ERROR). ' +
  'The joined delta contents equal the done content. Comments (`: keep-alive`) keep idle streams open.';

/** The streaming answers, for OpenAPI: SSE has no schema of its own, so a described string. */
export const AgentEventStream = (description: string) => ({
  description,
  content: {
    'text/event-stream': {
      schema: { type: 'string' as const, description: STREAM_TEXT },
      'x-event-schema': AgentEventSchema,
      example:
        ': connected\n\n' +
        'id: 1\nevent: delta\ndata: {"content":"Listing "}\n\n' +
        'id: 2\nevent: tool\ndata: {"id":"call_1","name":"run_command","input":{"command":"ls"},"output":{"exitCode":0,"stdout":"README.md\\n","stderr":""}}\n\n' +
        'id: 3\nevent: delta\ndata: {"content":"README.md is there."}\n\n' +
        'id: 4\nevent: done\ndata: {"id":"msg_...","role":"assistant","content":"Listing README.md is there.","finishReason":"stop","usage":{"promptTokens":52,"completionTokens":9,"totalTokens":61},"toolCalls":[...]}\n\n',
    },
  },
});
