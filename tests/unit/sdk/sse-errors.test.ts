// The SDK's SSE reader (eventsource-parser underneath) and KeelError, without a server: frames cut
// anywhere across chunks, every line end (CRLF, LF and a bare CR, split between chunks too),
// comments, multi-line data, ids, non-JSON data; KeelError from the workspace envelope, from
// problem+json and from a body that is neither.
import { expect, test } from 'bun:test';
import { KeelError } from '../../../clients/typescript/src/errors';
import { readEvents } from '../../../clients/typescript/src/sse';

/** A response whose body arrives in exactly these chunks. */
function chunked(chunks: string[]): Response {
  const enc = new TextEncoder();
  return new Response(
    new ReadableStream({
      start(c) {
        for (const s of chunks) c.enqueue(enc.encode(s));
        c.close();
      },
    }),
  );
}

async function all(chunks: string[]) {
  const out = [];
  for await (const e of readEvents(chunked(chunks))) out.push(e);
  return out;
}

const STREAM = ': connected\n\nid: 1\nevent: delta\ndata: {"content":"a"}\n\nid: 2\nevent: done\ndata: {"content":"a"}\n\n';
const EXPECTED = [
  { event: 'delta', id: '1', data: { content: 'a' } },
  { event: 'done', id: '2', data: { content: 'a' } },
];

test('events come out whole wherever the chunks cut them, whatever the line ends', async () => {
  for (const eol of ['\n', '\r\n', '\r']) {
    const text = STREAM.replace(/\n/g, eol);
    for (let cut = 1; cut < text.length; cut++) expect(await all([text.slice(0, cut), text.slice(cut)])).toEqual(EXPECTED);
    expect(await all([...text])).toEqual(EXPECTED); // one character per chunk
  }
});

test('multi-line data is joined, an event without a name is a message, non-JSON data stays text, comments are skipped', async () => {
  expect(await all([': keep-alive\n\ndata: line one\ndata: line two\n\n', 'data: {"a":\ndata: 1}\n\n'])).toEqual([
    { event: 'message', data: 'line one\nline two' },
    { event: 'message', data: { a: 1 } },
  ]);
});

test('multi-byte characters split across chunks are decoded whole', async () => {
  const bytes = new TextEncoder().encode('data: "héllo ✓"\n\n');
  const res = new Response(
    new ReadableStream({
      start(c) {
        for (const b of bytes) c.enqueue(new Uint8Array([b]));
        c.close();
      },
    }),
  );
  const out = [];
  for await (const e of readEvents(res)) out.push(e);
  expect(out).toEqual([{ event: 'message', data: 'héllo ✓' }]);
});

test('a stream cut mid-event throws, so that the caller can resume', async () => {
  let n = 0;
  const res = new Response(
    new ReadableStream({
      pull(c) {
        if (n++ === 0) c.enqueue(new TextEncoder().encode('id: 1\ndata: 1\n\nid: 2\nda'));
        else c.error(new TypeError('connection reset'));
      },
    }),
  );
  const seen: unknown[] = [];
  await expect(
    (async () => {
      for await (const e of readEvents(res)) seen.push(e);
    })(),
  ).rejects.toThrow('connection reset');
  expect(seen).toEqual([{ event: 'message', id: '1', data: 1 }]);
});

test('KeelError reads the workspace envelope', async () => {
  const res = Response.json({ error: { code: 'WORKSPACE_NOT_FOUND', message: 'no such workspace', details: { id: 'ws_1' } } }, { status: 404 });
  const e = await KeelError.fromResponse(res);
  expect(e).toBeInstanceOf(KeelError);
  expect(e).toBeInstanceOf(Error);
  expect({ status: e.status, code: e.code, message: e.message, details: e.details }).toEqual({ status: 404, code: 'WORKSPACE_NOT_FOUND', message: 'no such workspace', details: { id: 'ws_1' } });
});

test('KeelError reads problem+json: its code (or one made from its type), detail as the message, extensions as details', async () => {
  const withCode = new Response(JSON.stringify({ type: 'https://keel.dev/problems/asset-not-found', title: 'Not found', status: 404, detail: 'no asset a_1', code: 'ASSET_NOT_FOUND', assetId: 'a_1' }), {
    status: 404,
    headers: { 'content-type': 'application/problem+json' },
  });
  const a = await KeelError.fromResponse(withCode);
  expect({ status: a.status, code: a.code, message: a.message }).toEqual({ status: 404, code: 'ASSET_NOT_FOUND', message: 'no asset a_1' });
  expect(a.details).toMatchObject({ assetId: 'a_1', type: 'https://keel.dev/problems/asset-not-found' });

  const fromType = await KeelError.fromResponse(new Response(JSON.stringify({ type: 'https://keel.dev/problems/rate-limited', title: 'Too many requests', status: 429 }), { status: 429 }));
  expect({ status: fromType.status, code: fromType.code, message: fromType.message }).toEqual({ status: 429, code: 'RATE_LIMITED', message: 'Too many requests' });
});

test('KeelError of a body that is neither model: the status as the code', async () => {
  const e = await KeelError.fromResponse(new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }));
  expect({ status: e.status, code: e.code, message: e.message }).toEqual({ status: 502, code: 'HTTP_502', message: 'Bad Gateway' });
});
