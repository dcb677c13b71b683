// One turn: the model called through the AI SDK with the workspace tools, its stream turned into
// the session's events (`delta`, `tool`) as it arrives, the progress stored at each tool result and
// step, and the reason it ended decided once: the provider's, a cancel, a limit, or a failure.
import type { ModelMessage, StopCondition, ToolSet } from 'ai';
import type { AppError } from '../../../platform/errors';
import type { AgentContext, FinishReason, ToolCall, Usage } from './agent.model';
import type { AgentMessageRow } from './agent.tables';
import type { Providers } from './providers/providers';
import { loadAiSdk } from './providers/ai-sdk';

/** A tool call the model made that waits for a person's decision (`decision` once given). */
export interface PendingCall {
  type: 'approval';
  approvalId: string;
  id: string;
  name: string;
  input: unknown;
  decision?: Decision;
}
export interface Decision {
  approved: boolean;
  /** What the model reads as the tool's result when denied. */
  reason?: string;
}

/**
 * Text and tool calls in the order they happened: enough to replay a turn to the model, and to go on
 * with a paused one (its `approval` parts) after a restart.
 */
export type Part = { type: 'text'; text: string } | ({ type: 'tool' } & ToolCall) | PendingCall;

/** Why Keel stopped a turn, given as the abort reason of its signal. */
export type StopReason = 'cancelled' | 'time-limit' | 'interrupted';

export interface TurnProgress {
  content: string;
  toolCalls: ToolCall[];
  parts: Part[];
  usage: Usage;
}

export interface TurnOutcome extends TurnProgress {
  finishReason: FinishReason;
  error?: AppError;
}

export interface TurnInput {
  model: string;
  system: string;
  history: ModelMessage[];
  message: string;
  tools: ToolSet;
  maxSteps: number;
  /** Tokens the session may still spend; the turn stops after the step that reaches it. */
  tokenBudget: number;
  maxRetries: number;
  /** Silence of a provider call (before its headers, between chunks) that fails it as a timeout. */
  providerIdleTimeoutMs: number;
  signal: AbortSignal;
  onDelta(text: string): void;
  onTool(call: ToolCall): void;
  /** Called after each tool result and step, so a crash loses nothing already said. */
  onProgress(p: TurnProgress): void;
  /**
   * Called when the model's calls wait for approval (the AI SDK stopped at its `tool-approval-request`s);
   * resolves with a decision for each, or rejects when the turn stops meanwhile.
   */
  awaitDecisions(calls: PendingCall[]): Promise<Map<string, Decision>>;
  /** A paused turn taken up again (after a restart): what it had said, its `approval` parts undecided. */
  resume?: TurnProgress;
}

export const zeroUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });

const PROVIDER_REASONS = new Set<string>(['stop', 'length', 'content-filter', 'tool-calls', 'other']);

export async function runTurn(providers: Providers, input: TurnInput): Promise<TurnOutcome> {
  // The AI SDK loads with the first turn, not with Keel (providers/ai-sdk.ts).
  const { stepCountIs, streamText } = (await loadAiSdk()).ai;
  const p: TurnProgress = input.resume ?? { content: '', toolCalls: [], parts: [], usage: zeroUsage() };
  const inputs = new Map<string, unknown>();
  let steps = 0;
  let lastStepReason = 'stop';
  let failure: unknown;

  const overBudget: StopCondition<ToolSet> = () => p.usage.totalTokens >= input.tokenBudget;
  const pending = () => p.parts.filter((x): x is PendingCall => x.type === 'approval' && !x.decision);
  const pushText = (text: string) => {
    p.content += text;
    const last = p.parts.at(-1);
    if (last?.type === 'text') last.text += text;
    else p.parts.push({ type: 'text', text });
  };
  const pushTool = (call: ToolCall) => {
    p.toolCalls.push(call);
    // A decided call takes the place of its approval part: the order the model saw is kept.
    const at = p.parts.findIndex((x) => x.type === 'approval' && x.id === call.id);
    if (at >= 0) p.parts[at] = { type: 'tool', ...call };
    else p.parts.push({ type: 'tool', ...call });
    input.onTool(call);
    input.onProgress(p);
  };

  try {
    for (;;) {
      const waiting = pending();
      if (waiting.length) {
        const decided = await input.awaitDecisions(waiting);
        for (const w of waiting) w.decision = decided.get(w.approvalId) ?? { approved: false, reason: 'no decision was given' };
        input.onProgress(p);
      }
      if (input.signal.aborted) break;
      const stepsLeft = input.maxSteps - steps;
      if (stepsLeft <= 0) break;
      const result = streamText({
        model: await providers.model(input.model, {
          idleTimeoutMs: input.providerIdleTimeoutMs,
          onCallUsage(u) {
            p.usage.promptTokens += u.promptTokens;
            p.usage.completionTokens += u.completionTokens;
            p.usage.totalTokens += u.promptTokens + u.completionTokens;
            input.onProgress(p);
          },
        }),
        system: input.system,
        messages: [...input.history, { role: 'user', content: input.message }, ...partsToMessages(p.parts)],
        tools: input.tools,
        stopWhen: [stepCountIs(stepsLeft), overBudget],
        abortSignal: input.signal,
        maxRetries: input.maxRetries,
        // Failures arrive as `error` parts below; the default handler would print them.
        onError: () => {},
      });
      for await (const part of result.fullStream) {
        switch (part.type) {
          case 'text-delta':
            if (!part.text) break;
            pushText(part.text);
            input.onDelta(part.text);
            break;
          case 'tool-call':
            inputs.set(part.toolCallId, part.input);
            break;
          case 'tool-approval-request':
            p.parts.push({ type: 'approval', approvalId: part.approvalId, id: part.toolCall.toolCallId, name: part.toolCall.toolName, input: part.toolCall.input });
            break;
          case 'tool-result':
            pushTool({ id: part.toolCallId, name: part.toolName, input: part.input ?? inputs.get(part.toolCallId), output: part.output });
            break;
          case 'tool-output-denied': {
            const call = p.parts.find((x): x is PendingCall => x.type === 'approval' && x.id === part.toolCallId);
            pushTool({ id: part.toolCallId, name: part.toolName, input: call?.input, output: { denied: true, reason: call?.decision?.reason ?? null } });
            break;
          }
          case 'tool-error':
            pushTool({ id: part.toolCallId, name: part.toolName, input: part.input ?? inputs.get(part.toolCallId), output: { error: errorText(part.error) } });
            break;
          case 'finish-step':
            steps++;
            lastStepReason = part.finishReason;
            break;
          case 'error':
            failure = part.error;
            break;
        }
      }
      if (failure !== undefined || input.signal.aborted || !pending().length) break;
      input.onProgress(p);
    }
  } catch (e) {
    failure = e;
  }

  if (input.signal.aborted) return { ...p, finishReason: stopReason(input.signal.reason) };
  if (failure !== undefined) return { ...p, finishReason: 'error', error: providers.failure(failure, input.model) };
  if (lastStepReason === 'tool-calls' && steps >= input.maxSteps) return { ...p, finishReason: 'step-limit' };
  if (lastStepReason === 'tool-calls' && p.usage.totalTokens >= input.tokenBudget) return { ...p, finishReason: 'token-limit' };
  return { ...p, finishReason: PROVIDER_REASONS.has(lastStepReason) ? (lastStepReason as FinishReason) : 'other' };
}

function stopReason(reason: unknown): FinishReason {
  return reason === 'cancelled' || reason === 'time-limit' || reason === 'interrupted' ? reason : 'cancelled';
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 2000);

/** Keel's part of the system text, then the session's context. */
export function systemPrompt(workspaceId: string, context: AgentContext, mcpNotes: string[] = []): string {
  const lines = [
    `You are an assistant working in the development workspace ${workspaceId}, a Linux container.`,
    'Use the tools run_command, read_file, write_file and list_directory to act in it; they reach only that workspace.',
  ];
  if (mcpNotes.length) lines.push(...mcpNotes);
  if (context.system) lines.push('', context.system);
  if (context.instructions?.length) lines.push('', 'Instructions:', ...context.instructions.map((i) => `- ${i}`));
  const notes = Object.entries(context.notes ?? {});
  if (notes.length) lines.push('', 'Notes:', ...notes.map(([k, v]) => `${k}: ${v}`));
  return lines.join('\n');
}

/** Stored messages as the model reads them: each assistant turn split back into its steps. */
export function toModelMessages(rows: AgentMessageRow[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const row of rows) {
    if (row.role === 'user') {
      out.push({ role: 'user', content: row.content });
      continue;
    }
    const parts: Part[] = row.parts ? readParts(row.parts, row.toolCalls ? JSON.parse(row.toolCalls) : []) : row.content ? [{ type: 'text', text: row.content }] : [];
    // A call still waiting when its turn ended (cancelled, timed out) was never run: it is left out.
    out.push(...partsToMessages(parts.filter((x) => x.type !== 'approval')));
  }
  return out;
}

/**
 * A turn's parts as stored on its message: a tool part without its output, which the message's
 * `toolCalls` holds already (a megabyte tool output is stored and serialised once, not twice).
 */
export const storedParts = (parts: Part[]): string =>
  JSON.stringify(parts.map((x) => (x.type === 'tool' ? { type: 'tool', id: x.id, name: x.name, input: x.input } : x)));

/** Stored parts with their tool outputs back from the message's tool calls (rows stored whole stay as they are). */
export function readParts(stored: string, toolCalls: ToolCall[]): Part[] {
  const outputs = new Map(toolCalls.map((c) => [c.id, c.output]));
  return (JSON.parse(stored) as Part[]).map((x) => (x.type === 'tool' && x.output === undefined ? { ...x, output: outputs.get(x.id) } : x));
}

/**
 * One turn's parts as the model's messages: text and calls as assistant messages, results as tool
 * messages. A decided `approval` part becomes the AI SDK's approval request and response, which
 * `streamText` acts on first (runs the approved call, answers a denied one with its reason).
 */
export function partsToMessages(parts: Part[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  type Said = Exclude<ModelMessage, { role: 'system' | 'user' | 'tool' }>['content'] & unknown[];
  type Result = Extract<ModelMessage, { role: 'tool' }>['content'][number];
  let said: Said = [];
  let results: Result[] = [];
  const flush = () => {
    if (said.length) out.push({ role: 'assistant', content: said });
    if (results.length) out.push({ role: 'tool', content: results });
    said = [];
    results = [];
  };
  for (const part of parts) {
    if (part.type === 'text') {
      if (results.length) flush();
      said.push({ type: 'text', text: part.text });
    } else if (part.type === 'tool') {
      said.push({ type: 'tool-call', toolCallId: part.id, toolName: part.name, input: part.input ?? {} });
      results.push({ type: 'tool-result', toolCallId: part.id, toolName: part.name, output: { type: 'json', value: (part.output ?? null) as any } });
    } else {
      said.push({ type: 'tool-call', toolCallId: part.id, toolName: part.name, input: part.input ?? {} });
      said.push({ type: 'tool-approval-request', approvalId: part.approvalId, toolCallId: part.id });
      if (part.decision) results.push({ type: 'tool-approval-response', approvalId: part.approvalId, approved: part.decision.approved, reason: part.decision.reason });
    }
  }
  flush();
  return out;
}
