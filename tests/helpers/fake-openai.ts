// The one permitted test double: a local OpenAI-compatible server (Chat Completions) on 127.0.0.1,
// reached through the real provider code via OPENAI_BASE_URL. What it answers depends on the model
// name, so concurrent sessions need no shared script:
//   echo        streams "You said: <last user text>" (after tool results: "Tool output: <results>")
//   shell       the user text is a command: says "Running it. " and calls run_command with it, then reports the tool output
//   tools       the user text is JSON [{name, input}, ...]: calls those tools (in parallel), then reports
//   loop        calls run_command `echo again` on every step (never stops by itself)
//   slow        streams "tick " every `slowMs` until the client goes away
//   big         like echo, with 600 prompt + 400 completion tokens per call
//   fail-<n>    answers HTTP <n> with an OpenAI-style error body (fail-401 names a key, as OpenAI does)
//   drop        sends two chunks, then breaks the connection
//   stall       sends the role chunk, then nothing until the client goes away
// Every request is recorded (model, messages, tools, authorization); `aborts` counts answers whose
// client went away before their end.

export interface RecordedRequest {
  model: string;
  messages: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools: { type: string; function: { name: string; description?: string; parameters: any } }[];
  stream: boolean;
  authorization: string | null;
  body: any;
}

export interface Reply {
  text?: string[];
  tools?: { name: string; input: unknown }[];
  usage?: { prompt: number; completion: number };
  status?: number;
  error?: string;
  /** Milliseconds between chunks; with `forever`, chunks of `text` repeat until the client leaves. */
  delayMs?: number;
  forever?: boolean;
  drop?: boolean;
}

export interface FakeOpenAI {
  /** OPENAI_BASE_URL: includes /v1, as in the openai SDK. */
  baseURL: string;
  requests: RecordedRequest[];
  /** Streamed answers cut short because the client went away (an aborted provider request). */
  aborts: number;
  /** Answers being written now. */
  active: number;
  /** Replaces the next answers (whatever the model), in order. */
  queue(...replies: Reply[]): void;
  /** Resolves once `n` requests have been received in total. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

export const FAKE_KEY = 'sk-fake-0123456789abcdefghij';

const words = (s: string) => s.match(/\S+\s*|\s+/g) ?? [''];

/** Text of the tool results since the model's last call. */
function toolResults(messages: RecordedRequest['messages']): string {
  const out: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) out.unshift(String(messages[i]!.content));
  return out.join('\n');
}

function plan(req: RecordedRequest, slowMs: number): Reply {
  const m = req.messages;
  const last = m.at(-1);
  const lastUser = String([...m].reverse().find((x) => x.role === 'user')?.content ?? '');
  const prompt = 10 + m.length;
  const fromTools = last?.role === 'tool';
  const fail = /^fail-(\d{3})$/.exec(req.model);
  if (fail) {
    const status = Number(fail[1]);
    const error = status === 401 ? `Incorrect API key provided: ${FAKE_KEY}. You can find your API key at the dashboard.` : `fake provider failure ${status}`;
    return { status, error };
  }
  switch (req.model) {
    case 'slow':
      return { text: ['tick '], delayMs: slowMs, forever: true, usage: { prompt, completion: 1 } };
    case 'drop':
      return { text: ['partial ', 'answer '], drop: true };
    case 'stall':
      return { text: ['never '], delayMs: 3_600_000, forever: true };
    case 'loop':
      return { tools: [{ name: 'run_command', input: { command: 'echo again' } }], usage: { prompt, completion: 5 } };
    case 'shell':
      if (fromTools) break;
      return { text: ['Running ', 'it. '], tools: [{ name: 'run_command', input: { command: lastUser } }], usage: { prompt, completion: 5 } };
    case 'tools':
      if (fromTools) break;
      return { tools: JSON.parse(lastUser), usage: { prompt, completion: 5 } };
  }
  const text = words(fromTools ? `Tool output: ${toolResults(m)}` : `You said: ${lastUser}`);
  const usage = req.model === 'big' ? { prompt: 600, completion: 400 } : { prompt, completion: text.length };
  return { text, usage };
}

export function startFakeOpenAI(opts: { slowMs?: number } = {}): FakeOpenAI {
  const requests: RecordedRequest[] = [];
  const queued: Reply[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let aborts = 0;
  let active = 0;
  let n = 0;
  const enc = new TextEncoder();

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      if (request.method !== 'POST' || url.pathname !== '/v1/chat/completions') return Response.json({ error: { message: 'not found' } }, { status: 404 });
      const body = (await request.json()) as any;
      const rec: RecordedRequest = {
        model: String(body.model),
        messages: body.messages ?? [],
        tools: body.tools ?? [],
        stream: !!body.stream,
        authorization: request.headers.get('authorization'),
        body,
      };
      requests.push(rec);
      for (const w of waiters.filter((w) => requests.length >= w.n)) w.resolve();
      const reply = queued.shift() ?? plan(rec, opts.slowMs ?? 50);
      if (reply.status) {
        return Response.json({ error: { message: reply.error, type: 'fake_error', code: String(reply.status) } }, { status: reply.status });
      }
      const id = `chatcmpl-${++n}`;
      const base = { id, object: 'chat.completion.chunk', created: 1_700_000_000, model: rec.model };
      const usage = reply.usage ?? { prompt: 10, completion: 1 };
      const usageBody = { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion };
      const toolCalls = (reply.tools ?? []).map((t, i) => ({ index: i, id: `call_${n}_${i}`, type: 'function', function: { name: t.name, arguments: JSON.stringify(t.input) } }));
      const finish = toolCalls.length ? 'tool_calls' : 'stop';

      if (!rec.stream) {
        const content = (reply.text ?? []).join('');
        return Response.json({
          id,
          object: 'chat.completion',
          created: base.created,
          model: rec.model,
          choices: [{ index: 0, message: { role: 'assistant', content: toolCalls.length ? null : content, ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index, ...c }) => c) } : {}) }, finish_reason: finish }],
          usage: usageBody,
        });
      }

      let closed = false;
      let finished = false;
      const onGone = () => {
        if (!closed && !finished) aborts++;
        closed = true;
      };
      request.signal.addEventListener('abort', onGone, { once: true });
      const stream = new ReadableStream<Uint8Array>({
        async start(c) {
          active++;
          const send = (o: unknown) => {
            if (!closed) c.enqueue(enc.encode(`data: ${JSON.stringify(o)}\n\n`));
          };
          const chunk = (delta: unknown, finish_reason: string | null = null) => send({ ...base, choices: [{ index: 0, delta, finish_reason }] });
          try {
            chunk({ role: 'assistant', content: '' });
            const texts = reply.text ?? [];
            for (let i = 0; !closed && (i < texts.length || (reply.forever && texts.length)); i++) {
              if (reply.delayMs) await Bun.sleep(reply.delayMs);
              chunk({ content: texts[i % texts.length] });
              if (reply.drop && i === texts.length - 1) {
                await Bun.sleep(5);
                finished = true;
                c.error(new Error('connection dropped by the fake provider'));
                return;
              }
            }
            for (const t of toolCalls) chunk({ tool_calls: [t] });
            chunk({}, finish);
            send({ ...base, choices: [], usage: usageBody });
            if (!closed) c.enqueue(enc.encode('data: [DONE]\n\n'));
            finished = true;
            if (!closed) c.close();
          } finally {
            active--;
          }
        },
        cancel: onGone,
      });
      return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
    },
  });

  return {
    baseURL: `http://127.0.0.1:${server.port}/v1`,
    requests,
    get aborts() {
      return aborts;
    },
    get active() {
      return active;
    },
    queue: (...r) => queued.push(...r),
    waitForRequests(count, timeoutMs = 10_000) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the fake provider got ${requests.length} of ${count} requests`)), timeoutMs);
        waiters.push({ n: count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    close: () => void server.stop(true),
  };
}
