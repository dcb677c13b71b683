// A 100 MB log line (BENCH_LONG_LINE_MB), followed by BENCH_LONG_LINE_FOLLOWERS followers (default 2)
// and then read whole, on a Keel server in its own process: the server's RSS idle, its peak while
// the line is written and followed, its peak during the read; the time from writing to the last
// follower having the line; and the slowest /health answer meanwhile. Followers are raw sockets that
// only count bytes, so the figures are Keel's.
import { openRawStream, round } from './lib';
import { startKeelProcess } from './keel-process';

const MB = Number(process.env.BENCH_LONG_LINE_MB ?? 100);
const FOLLOWERS = Number(process.env.BENCH_LONG_LINE_FOLLOWERS ?? 2);
const MiB = 2 ** 20;

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess({ APP_WORKSPACE_LOG_MAX_SIZE: '400m', APP_WORKSPACE_LOG_MAX_FILES: '2' });
  try {
    const ws = await keel.workspace(`bench-long-line-${Date.now().toString(36)}`);
    await Bun.sleep(500);
    const rssIdle = keel.rss();
    let peak = rssIdle;
    let slowestHealth = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const t0 = performance.now();
        await fetch(`${keel.url}/health`).then((r) => r.arrayBuffer());
        slowestHealth = Math.max(slowestHealth, performance.now() - t0);
        peak = Math.max(peak, keel.rss());
        await Bun.sleep(50);
      }
    })();

    // Each follower is done when the marker written after the line arrives.
    const done: Promise<number>[] = [];
    const streams: { close(): void }[] = [];
    for (let i = 0; i < FOLLOWERS; i++) {
      let finish!: (at: number) => void;
      let fail!: (e: Error) => void;
      done.push(
        new Promise((resolve, reject) => {
          finish = resolve;
          fail = reject;
          setTimeout(() => reject(new Error('the marker line did not arrive within 300 s')), 300_000);
        }),
      );
      streams.push(
        await openRawStream(keel.url, `/api/workspaces/${ws.id}/logs?follow=true&tail=0`, keel.token(), (at, text) => {
          if (text.includes('"message":"bench-after-long-line"')) finish(at);
          if (text.includes('event: dropped') || text.includes('event: end') || text.includes('event: error')) fail(new Error('the follow ended early'));
          // Keep the last 64 characters: a marker split between two chunks is found in the next.
          return Math.max(0, text.length - 64);
        }, 64),
      );
    }
    await Bun.sleep(500);
    const t0 = Date.now();
    const res = await keel.api(`/api/workspaces/${ws.id}/exec`, {
      method: 'POST',
      json: { command: `head -c ${MB * 1_000_000} /dev/zero | tr -c a x > /proc/1/fd/1; echo > /proc/1/fd/1; echo bench-after-long-line > /proc/1/fd/1`, timeout: 300_000 },
    });
    if (res.status !== 200) throw new Error(`exec failed: ${res.status}`);
    const followedMs = Math.max(...(await Promise.all(done))) - t0;
    const peakFollowing = peak;
    const slowestHealthFollowing = slowestHealth;
    slowestHealth = 0;
    for (const s of streams) s.close();

    const r0 = Date.now();
    const read = await keel.api(`/api/workspaces/${ws.id}/logs?tail=${Math.ceil((MB * 1_000_000) / 65536) + 2}`);
    const entries = ((await read.json()) as { logs: unknown[] }).logs.length;
    const readMs = Date.now() - r0;
    sampling = false;
    await sampler;

    const result = {
      lineMB: MB,
      followers: FOLLOWERS,
      rssIdleMiB: round(rssIdle / MiB, 0),
      rssPeakFollowingMiB: round(peakFollowing / MiB, 0),
      rssPeakWithReadMiB: round(peak / MiB, 0),
      followedMs,
      readMs,
      entriesRead: entries,
      slowestHealthFollowingMs: round(slowestHealthFollowing, 0),
      slowestHealthReadingMs: round(slowestHealth, 0),
    };
    console.log(result);
    return result;
  } finally {
    await keel.stop();
  }
}
