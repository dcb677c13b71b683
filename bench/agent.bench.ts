// Agent sessions: (1) time to the first `delta` of a streamed message through Keel (HTTP, auth,
// session rows, the AI SDK's request to the provider, the event log write, SSE) against the first
// content chunk of the same fake provider called directly, interleaved in the same run: added ms,
// median and p99. (2) 100 sessions streaming at once: Keel's memory, wall time, and event loss
// (every stream's ids contiguous, its deltas equal to its done content, the stored log equal to it).
// (3) An `exec` tool call through Keel's MCP endpoint (the SDK's Client over Streamable HTTP) against
// the same command over POST .../exec, interleaved: what MCP adds to a round trip.
// BENCH_AGENT_ONLY=mcp runs (3) alone.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startFakeOpenAI, FAKE_KEY } from '../tests/helpers/fake-openai';
import { startKeelProcess } from './keel-process';
import { round, summarize } from './lib';

const RUNS = Number(process.env.BENCH_AGENT_RUNS ?? 200);
const CONCURRENT = Number(process.env.BENCH_AGENT_CONCURRENT ?? 100);
const WORDS = Number(process.env.BENCH_AGENT_WORDS ?? 200);
const MCP_RUNS = Number(process.env.BENCH_AGENT_MCP_RUNS ?? 100);
const ONLY = process.env.BENCH_AGENT_ONLY;

/** (3): exec over MCP vs over HTTP, interleaved after a warm-up; medians and p99s of each. */
async function mcpRoundTrip(keel: Awaited<ReturnType<typeof startKeelProcess>>, workspaceId: string) {
  const client = new Client({ name: 'keel-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${keel.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keel.token()}` } } }));
  const command = 'echo bench';
  const viaMcp = async () => {
    const t0 = performance.now();
    const r = (await client.callTool({ name: 'exec', arguments: { id: workspaceId, command } })) as { isError?: boolean; content: { text: string }[] };
    if (r.isError || !r.content[0]!.text.includes('"stdout":"bench\\n"')) throw new Error(`mcp exec failed: ${r.content[0]?.text}`);
    return performance.now() - t0;
  };
  const viaHttp = async () => {
    const t0 = performance.now();
    const res = await keel.api(`/api/workspaces/${workspaceId}/exec`, { method: 'POST', json: { command } });
    const body = (await res.json()) as { stdout: string };
    if (res.status !== 200 || body.stdout !== 'bench\n') throw new Error(`http exec failed: ${res.status}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < 10; i++) {
    await viaMcp();
    await viaHttp();
  }
  const m: number[] = [];
  const h: number[] = [];
  for (let i = 0; i < MCP_RUNS; i++) {
    m.push(await viaMcp());
    h.push(await viaHttp());
  }
  await client.close();
  const ms = summarize(m);
  const hs = summarize(h);
  const out = {
    runs: MCP_RUNS,
    http: { medianMs: round(hs.medianMs), p99Ms: round(hs.p99Ms) },
    mcp: { medianMs: round(ms.medianMs), p99Ms: round(ms.p99Ms) },
    addedMedianMs: round(ms.medianMs - hs.medianMs),
    medianRatio: round(ms.medianMs / hs.medianMs),
  };
  console.table({ 'POST /api/workspaces/{id}/exec': out.http, 'MCP tools/call exec': out.mcp });
  console.log(`exec over MCP: added ${out.addedMedianMs} ms median (ratio ${out.medianRatio})`);
  return out;
}

/** Reads an SSE body until `match` sees a frame; returns ms from `t0`, and drains the rest. */
async function untilFrame(res: Response, t0: number, match: (frame: string) => boolean): Promise<number> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let at = NaN;
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    buf += dec.decode(r.value, { stream: true });
    const frames = buf.split('\n\n');
    buf = frames.pop()!;
    if (Number.isNaN(at) && frames.some(match)) at = performance.now() - t0;
  }
  if (Number.isNaN(at)) throw new Error('no matching frame');
  return at;
}

interface Frame {
  id: number;
  event: string;
  data: any;
}

async function readFrames(res: Response): Promise<Frame[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.includes('data:'))
    .map((b) => {
      const f: Frame = { id: NaN, event: 'message', data: null };
      for (const line of b.split('\n')) {
        if (line.startsWith('id:')) f.id = Number(line.slice(3));
        else if (line.startsWith('event:')) f.event = line.slice(6).trim();
        else if (line.startsWith('data:')) f.data = JSON.parse(line.slice(5));
      }
      return f;
    });
}

export async function run(): Promise<Record<string, unknown>> {
  const fake = startFakeOpenAI();
  const keel = await startKeelProcess({ OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0' });
  try {
    const ws = await keel.workspace(`bench-agent-${Date.now().toString(36)}`);
    if (ONLY === 'mcp') return { mcpExec: await mcpRoundTrip(keel, ws.id) };
    const newSession = async () => {
      const res = await keel.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: ws.id, model: 'openai/echo' } });
      if (res.status !== 201) throw new Error(`session create failed: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { id: string }).id;
    };

    // (1) Time to first delta, one fresh session per message so every prompt is the same size.
    const direct = async () => {
      const t0 = performance.now();
      const res = await fetch(`${fake.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${FAKE_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'echo', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello there' }] }),
      });
      return untilFrame(res, t0, (f) => /"content":"[^"]/.test(f));
    };
    const viaKeel = async (session: string) => {
      const t0 = performance.now();
      const res = await keel.api(`/api/agent/sessions/${session}/messages`, { method: 'POST', json: { message: 'hello there', stream: true } });
      if (res.status !== 200) throw new Error(`send failed: ${res.status}`);
      return untilFrame(res, t0, (f) => f.includes('event: delta'));
    };
    const sessions = await Promise.all(Array.from({ length: RUNS + 20 }, newSession));
    for (let i = 0; i < 20; i++) {
      await direct();
      await viaKeel(sessions.pop()!);
    }
    const d: number[] = [];
    const k: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      d.push(await direct());
      k.push(await viaKeel(sessions.pop()!));
    }
    const ds = summarize(d);
    const ks = summarize(k);
    const ttfd = {
      runs: RUNS,
      direct: { medianMs: round(ds.medianMs), p99Ms: round(ds.p99Ms) },
      keel: { medianMs: round(ks.medianMs), p99Ms: round(ks.p99Ms) },
      addedMedianMs: round(ks.medianMs - ds.medianMs),
      addedP99Ms: round(ks.p99Ms - ds.p99Ms),
      medianRatio: round(ks.medianMs / ds.medianMs),
    };
    console.table({ 'fake provider, direct': ttfd.direct, 'through Keel': ttfd.keel });
    console.log(`time to first delta: added ${ttfd.addedMedianMs} ms median, ${ttfd.addedP99Ms} ms p99 (ratio ${ttfd.medianRatio})`);

    // (2) Concurrent streaming sessions.
    const text = Array.from({ length: WORDS }, (_, i) => `word${i}`).join(' ');
    const expected = `You said: ${text}`;
    const many = await Promise.all(Array.from({ length: CONCURRENT }, newSession));
    Bun.gc(true);
    await Bun.sleep(200);
    const rssBefore = keel.rss();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, keel.rss())), 25);
    const t0 = performance.now();
    const streams = await Promise.all(
      many.map(async (id) => {
        const res = await keel.api(`/api/agent/sessions/${id}/messages`, { method: 'POST', json: { message: text, stream: true } });
        if (res.status !== 200) throw new Error(`stream refused: ${res.status} ${await res.text()}`);
        return { id, frames: await readFrames(res) };
      }),
    );
    const wallMs = performance.now() - t0;
    clearInterval(sampler);
    let lost = 0;
    let events = 0;
    for (const s of streams) {
      events += s.frames.length;
      const contiguous = s.frames.every((f, i) => f.id === i + 1);
      const done = s.frames.at(-1);
      const joined = s.frames.filter((f) => f.event === 'delta').map((f) => f.data.content).join('');
      if (!contiguous || done?.event !== 'done' || done.data.content !== expected || joined !== expected) lost++;
    }
    // The stored log of each session equals what its stream carried.
    let logMismatch = 0;
    for (const s of streams.slice(0, 20)) {
      const replay = await readFrames(await keel.api(`/api/agent/sessions/${s.id}/events?after=0`));
      if (JSON.stringify(replay) !== JSON.stringify(s.frames)) logMismatch++;
    }
    const concurrent = {
      sessions: CONCURRENT,
      deltasPerStream: streams[0]!.frames.length - 1,
      events,
      wallMs: round(wallMs),
      eventsPerSecond: round(events / (wallMs / 1000)),
      rssBeforeMiB: round(rssBefore / 2 ** 20, 1),
      rssPeakMiB: round(rssPeak / 2 ** 20, 1),
      rssGrowthMiB: round((rssPeak - rssBefore) / 2 ** 20, 1),
      streamsWithLoss: lost,
      logsDifferingFromStream: logMismatch,
    };
    console.table(concurrent);
    if (lost || logMismatch) throw new Error(`event loss: ${lost} streams, ${logMismatch} logs`);
    const mcpExec = await mcpRoundTrip(keel, ws.id);
    return { timeToFirstDelta: ttfd, concurrent, mcpExec };
  } finally {
    await keel.stop();
    fake.close();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
