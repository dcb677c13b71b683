// Shared measuring tools for the benchmarks: a bounded load loop, percentiles, a table printer.

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return NaN;
  const i = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[i]!;
}

/** The middle sample (the upper one of an even count), for figures taken as the median of rounds. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function summarize(samplesMs: number[]) {
  const s = [...samplesMs].sort((a, b) => a - b);
  return { n: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), medianMs: percentile(s, 50), maxMs: s[s.length - 1] ?? NaN };
}

/** Runs `task` `total` times over `concurrency` loops (bounded in count), timing each call. */
export async function load(task: () => Promise<unknown>, opts: { total: number; concurrency: number; warmup?: number }): Promise<LoadResult> {
  for (let i = 0; i < (opts.warmup ?? Math.min(200, opts.total / 10)); i++) await task();
  const samples: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (next < opts.total) {
        next++;
        const t0 = performance.now();
        await task();
        samples.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const { p50Ms, p99Ms } = summarize(samples);
  return { requests: samples.length, seconds, rps: samples.length / seconds, p50Ms, p99Ms };
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export function printTable(title: string, rows: Record<string, unknown>[]) {
  console.log(`\n## ${title}`);
  console.table(rows);
}

/**
 * A raw HTTP/1.1 GET of an SSE route on a socket, so a benchmark's many followers cost the client
 * little and the figures stay the server's. `read` gets the arrival time (epoch ms, read from `clock`:
 * Date.now unless told) and the text not yet consumed, and answers how much of it it consumed; at
 * most `keep` unconsumed characters are kept for the next chunk (a frame split across chunks).
 */
export async function openRawStream(
  base: string,
  path: string,
  token: string,
  read: (at: number, text: string) => number,
  keep = 2048,
  clock: () => number = Date.now,
): Promise<{ close(): void }> {
  const url = new URL(base);
  let carry = '';
  const socket = await Bun.connect({
    hostname: url.hostname,
    port: Number(url.port),
    socket: {
      data(_s, d) {
        const text = carry + d.toString();
        carry = text.slice(Math.max(read(clock(), text), text.length - keep));
      },
    },
  });
  socket.write(`GET ${path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  return { close: () => socket.end() };
}
