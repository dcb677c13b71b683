// A turn's parts are stored without their tool outputs (the message's toolCalls hold them once) and
// read back whole; rows stored before, with the outputs inside their parts, read as they are.
import { expect, test } from 'bun:test';
import { readParts, storedParts, toModelMessages, type Part } from '../../../../src/services/workspaces/agent/agent.turn';
import type { AgentMessageRow } from '../../../../src/services/workspaces/agent/agent.tables';

const big = 'A'.repeat(100_000);
const toolCalls = [{ id: 'c1', name: 'read_file', input: { path: 'x' }, output: { content: big, truncated: false } }];
const parts: Part[] = [
  { type: 'text', text: 'Reading.' },
  { type: 'tool', ...toolCalls[0]! },
  { type: 'approval', approvalId: 'ap1', id: 'c2', name: 'run_command', input: { command: 'ls' } },
  { type: 'text', text: 'Done.' },
];

test('stored parts leave the tool outputs to the tool calls, and read back equal', () => {
  const stored = storedParts(parts);
  expect(stored).not.toContain(big);
  expect(readParts(stored, toolCalls)).toEqual(parts);
});

test('parts stored whole (before this change) read back as they are', () => {
  expect(readParts(JSON.stringify(parts), [])).toEqual(parts);
});

test("a stored turn replays its tool results to the model", () => {
  const row = { role: 'assistant', content: 'Reading.Done.', toolCalls: JSON.stringify(toolCalls), parts: storedParts(parts.filter((p) => p.type !== 'approval')) } as AgentMessageRow;
  const messages = toModelMessages([row]);
  expect(messages[1]).toEqual({ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'json', value: toolCalls[0]!.output } }] });
});
