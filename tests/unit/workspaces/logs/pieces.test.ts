// The engine's log messages rebuilt into lines and cut into bounded pieces (engine/frames.ts), as
// the engine sends them: a line cut every 16 KiB at any byte, characters of any width, both streams.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { LOG_PIECE_MAX_BYTES, logPieceAssembler, type LogPiece } from '../../../../src/services/workspaces/engine/frames';
import type { StdStream } from '../../../../src/services/workspaces/engine/engine';

const utf8 = new TextEncoder();
const bytesOf = (s: string) => utf8.encode(s).byteLength;

/** The engine's messages for `line`: "<ts> " then `size` bytes at a time (any byte, mid-character too), the last ending in "\n". */
function engineMessages(ts: string, line: string, size: number): Uint8Array[] {
  const body = utf8.encode(line);
  const out: Uint8Array[] = [];
  for (let at = 0; at < body.length || out.length === 0; at += size) {
    const chunk = body.subarray(at, Math.min(body.length, at + size));
    const end = at + size >= body.length;
    const prefix = utf8.encode(`${ts} `);
    const m = new Uint8Array(prefix.length + chunk.length + (end ? 1 : 0));
    m.set(prefix);
    m.set(chunk, prefix.length);
    if (end) m[m.length - 1] = 0x0a;
    out.push(m);
  }
  return out;
}

function collect(maxBytes: number) {
  const pieces: { stream: StdStream; piece: LogPiece }[] = [];
  const a = logPieceAssembler((stream, piece) => pieces.push({ stream, piece }), maxBytes);
  return { a, pieces };
}

/** The lines the pieces make again: the text of consecutive pieces of one stream up to a last one. */
function linesOf(pieces: { stream: StdStream; piece: LogPiece }[], stream: StdStream): { ts: string; text: string; parts: string[] }[] {
  const lines: { ts: string; text: string; parts: string[] }[] = [];
  let open: { ts: string; parts: string[] } | undefined;
  for (const { stream: s, piece } of pieces) {
    if (s !== stream) continue;
    if (piece.index === 0) open = { ts: piece.ts, parts: [] };
    expect(open).toBeDefined();
    expect(piece.index).toBe(open!.parts.length);
    expect(piece.ts).toBe(open!.ts);
    open!.parts.push(piece.text);
    if (piece.last) {
      lines.push({ ts: open!.ts, text: open!.parts.join(''), parts: open!.parts });
      open = undefined;
    }
  }
  expect(open).toBeUndefined();
  return lines;
}

// Any code point, astral ones included (surrogate pairs in JavaScript), but no line break (and no
// U+FFFD, which a wrongly cut character would turn into).
const anyChar = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\n' && c !== '\uFFFD');
const lineText = fc.string({ unit: fc.oneof(fc.constantFrom('a', 'é', '€', '😀', '\r'), anyChar), maxLength: 200 });

describe('log lines cut into pieces', () => {
  test('every piece holds at most the cap of UTF-8, the pieces of a line join to the line, and lines keep their order and stream', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ stream: fc.constantFrom<StdStream>('stdout', 'stderr'), text: lineText }), { maxLength: 20 }),
        fc.integer({ min: 4, max: 40 }),
        fc.integer({ min: 1, max: 50 }),
        (lines, maxBytes, messageSize) => {
          const { a, pieces } = collect(maxBytes);
          lines.forEach((l, i) => {
            const ts = `2026-01-05T10:00:00.${String(i).padStart(9, '0')}Z`;
            for (const m of engineMessages(ts, l.text, messageSize)) a.push(l.stream, m);
          });
          a.flush();
          for (const { piece } of pieces) {
            expect(bytesOf(piece.text)).toBeLessThanOrEqual(maxBytes);
            expect(piece.text).not.toContain('\uFFFD');
          }
          for (const stream of ['stdout', 'stderr'] as const) {
            const want = lines.filter((l) => l.stream === stream).map((l) => l.text);
            const got = linesOf(pieces, stream);
            expect(got.map((g) => g.text)).toEqual(want);
            // A piece is cut only when the next character would not fit in it.
            for (const g of got) {
              for (let i = 0; i + 1 < g.parts.length; i++) {
                const next = String.fromCodePoint(g.parts[i + 1]!.codePointAt(0)!);
                expect(bytesOf(g.parts[i]!) + bytesOf(next)).toBeGreaterThan(maxBytes);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  test('a character that would cross the 64 KiB cap starts the next piece whole', () => {
    const { a, pieces } = collect(LOG_PIECE_MAX_BYTES);
    const line = 'a'.repeat(LOG_PIECE_MAX_BYTES - 1) + '€' + 'b'.repeat(10) + '😀'.repeat(LOG_PIECE_MAX_BYTES / 4);
    for (const m of engineMessages('2026-01-05T10:00:00.000000000Z', line, 16 * 1024)) a.push('stdout', m);
    const texts = pieces.map((p) => p.piece.text);
    expect(texts[0]).toBe('a'.repeat(LOG_PIECE_MAX_BYTES - 1));
    expect(texts[1]!.startsWith('€' + 'b'.repeat(10) + '😀')).toBe(true);
    for (const t of texts) expect(bytesOf(t)).toBeLessThanOrEqual(LOG_PIECE_MAX_BYTES);
    expect(texts.join('')).toBe(line);
    expect(pieces.map((p) => p.piece.last)).toEqual(texts.map((_, i) => i === texts.length - 1));
  });

  test('a 64 MB line is assembled in time linear in its length, one piece at a time', () => {
    const ts = '2026-01-05T10:00:00.000000000Z';
    const run = (mb: number) => {
      let count = 0;
      let bytes = 0;
      const a = logPieceAssembler((_, p) => {
        count++;
        bytes += p.text.length;
      });
      const chunk = utf8.encode(`${ts} ${'x€'.repeat(16 * 1024 / 4)}`);
      const end = utf8.encode(`${ts} \n`);
      const messages = (mb * 1024 * 1024) / (16 * 1024);
      const t0 = performance.now();
      for (let i = 0; i < messages; i++) a.push('stdout', chunk);
      a.push('stdout', end);
      return { ms: performance.now() - t0, count, bytes };
    };
    run(4); // warm-up
    const small = run(16);
    const big = run(64);
    expect(big.bytes).toBe(4 * small.bytes);
    // Quadratic assembly would take 16 times as long for 4 times the line; allow noise up to 8 times.
    expect(big.ms).toBeLessThan(8 * small.ms + 200);
    expect(big.ms).toBeLessThan(10_000);
  });
});
