// A session's MCP servers are reached at the address that was checked: the client Keel runs for a
// turn (connectMcpServers) against a real MCP server (the official SDK's, Streamable HTTP) on
// 127.0.0.1, with DNS given as the resolver parameter (a name ending in `.test` never resolves through
// the system, so a request that arrives was dialled to the checked address, not resolved again). A name
// that rebinds to an address Keel keeps out of reach (127.0.0.2 here, denied like Keel's own ports)
// never reaches it.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import type { Resolver, TargetPolicy } from '../../../src/platform/net/address-policy';
import { connectMcpServers } from '../../../src/services/workspaces/agent/mcp-client';
import { startCalcServer } from '../../helpers/mcp-calc';

let calc: ReturnType<typeof Bun.serve>;
let inside: ReturnType<typeof Bun.serve>;
const calcHosts: (string | null)[] = [];
let insideHits = 0;
const policy: TargetPolicy = { denyPrivate: false, deny: { cidrs: ['127.0.0.2/32'] } };

beforeAll(() => {
  for (let attempt = 0; ; attempt++) {
    calc = startCalcServer((request) => calcHosts.push(request.headers.get('host')));
    try {
      // The same port on an address the policy refuses: what a rebinding name would be moved to.
      inside = Bun.serve({ hostname: '127.0.0.2', port: calc.port, fetch: () => (insideHits++, new Response('inside')) });
      break;
    } catch (e) {
      calc.stop(true);
      if (attempt > 5) throw e;
    }
  }
});
afterAll(() => {
  calc.stop(true);
  inside.stop(true);
});

/** Answers `answers` in turn, round and round. */
const rebinding = (answers: string[]): Resolver => {
  let n = 0;
  return async () => [{ address: answers[n++ % answers.length]!, family: 4 }];
};

test("a named server's tools are listed and called through the checked address, with the name as Host", async () => {
  const before = calcHosts.length;
  const mcp = await connectMcpServers([{ name: 'calc', url: `http://calc.test:${calc.port}/mcp` }], policy, 5000, rebinding(['127.0.0.1']));
  try {
    expect(mcp.notes).toEqual([]);
    expect(Object.keys(mcp.tools)).toEqual(['calc__add']);
    const out = await mcp.tools['calc__add']!.execute!({ a: 2, b: 40 }, { toolCallId: 't1', messages: [] });
    expect(JSON.stringify(out)).toContain('sum=42');
    expect(calcHosts.length).toBeGreaterThan(before);
    expect(new Set(calcHosts.slice(before))).toEqual(new Set([`calc.test:${calc.port}`]));
  } finally {
    await mcp.close();
  }
});

test('a server name that rebinds to an address Keel keeps out of reach after its tools were listed never reaches it', async () => {
  let rebound = false;
  const dns: Resolver = async () => [{ address: rebound ? '127.0.0.2' : '127.0.0.1', family: 4 }];
  const mcp = await connectMcpServers([{ name: 'calc', url: `http://rebind.test:${calc.port}/mcp` }], policy, 5000, dns);
  try {
    expect(Object.keys(mcp.tools)).toEqual(['calc__add']);
    // The name now answers the refused address: the call is checked again, refused, and reported to the model.
    rebound = true;
    const before = calcHosts.length;
    const out = await mcp.tools['calc__add']!.execute!({ a: 1, b: 1 }, { toolCallId: 't2', messages: [] });
    expect(JSON.stringify(out)).toContain('did not answer');
    expect(JSON.stringify(out)).not.toContain('sum=');
    expect(calcHosts.length).toBe(before);
    expect(insideHits).toBe(0);
  } finally {
    await mcp.close();
  }
});

test('a server name resolving to a metadata address is a note for the model, and nothing is connected', async () => {
  const before = calcHosts.length;
  const mcp = await connectMcpServers([{ name: 'meta', url: `http://meta.test:${calc.port}/mcp` }], policy, 5000, rebinding(['169.254.169.254']));
  expect(mcp.tools).toEqual({});
  expect(mcp.notes[0]).toContain('The MCP server meta could not be reached');
  expect(mcp.notes[0]).toContain('metadata');
  expect(calcHosts.length).toBe(before);
  await mcp.close();
});
