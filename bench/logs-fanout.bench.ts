// Log fan-out: N concurrent followers (default 1,000) of one workspace on a Keel server in its own
// process. For each line written in the workspace, the time from the engine's timestamp of the line
// to its arrival at each follower (p50/p99 over all deliveries) and until the last follower has it
// (p50/p99 over lines), against the same with 1 follower (the baseline); and the server's RSS idle,
// with the followers attached, per follower. Followers are raw HTTP/1.1 sockets, so the client side
// stays cheap and the numbers are Keel's.
import { openRawStream, round, summarize } from './lib';
import { startKeelProcess, type KeelProcess } from './keel-process';
import type { LogEntry, StreamStats } from '../clients/typescript/src';

const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 1000);
const LINES = Number(process.env.BENCH_FANOUT_LINES ?? 20);

interface Follower {
  /** Arrival time (epoch ms) of each marker line, and the engine timestamp it carried. */
  seen: Map<string, { at: number; engineTs: number }>;
  close(): void;
}

async function openFollower(keel: KeelProcess, id: string): Promise<Follower> {
  const seen: Follower['seen'] = new Map();
  const path = `/api/workspaces/${id}/logs?follow=true&tail=0`;
  const stream = await openRawStream(keel.url, path, keel.token(), (at, text) => {
    let from = 0;
    for (;;) {
      const i = text.indexOf('"message":"mark-', from);
      if (i < 0) break;
      const start = text.lastIndexOf('data: ', i);
      const end = text.indexOf('\n', i);
      if (start < 0 || end < 0) break;
      const entry = JSON.parse(text.slice(start + 6, end)) as LogEntry;
      if (!seen.has(entry.message)) seen.set(entry.message, { at, engineTs: Date.parse(entry.timestamp) });
      from = end;
    }
    return from;
  }, 512);
  return { seen, close: stream.close };
}

async function streams(keel: KeelProcess) {
  return (await (await keel.api('/api/system/streams', { as: 'admin' })).json()) as StreamStats;
}

async function waitFollowers(keel: KeelProcess, n: number) {
  const until = Date.now() + 120_000;
  for (;;) {
    const s = await streams(keel);
    if (s.followers === n) return s;
    if (Date.now() > until) throw new Error(`expected ${n} followers, have ${s.followers}`);
    await Bun.sleep(200);
  }
}

/** Writes LINES marker lines in the workspace and measures their delivery to every follower. */
async function measure(keel: KeelProcess, wsId: string, followers: Follower[], tag: string) {
  const perDelivery: number[] = [];
  const perLine: number[] = [];
  for (let i = 0; i < LINES; i++) {
    const mark = `mark-${tag}-${i}`;
    const res = await keel.api(`/api/workspaces/${wsId}/exec`, { method: 'POST', json: { command: `echo ${mark} > /proc/1/fd/1` } });
    if (res.status !== 200) throw new Error(`exec failed: ${res.status}`);
    const until = Date.now() + 30_000;
    while (followers.some((f) => !f.seen.has(mark))) {
      if (Date.now() > until) throw new Error(`${mark} did not reach every follower`);
      await Bun.sleep(5);
    }
    const lats = followers.map((f) => {
      const s = f.seen.get(mark)!;
      return s.at - s.engineTs;
    });
    perDelivery.push(...lats);
    perLine.push(Math.max(...lats));
    await Bun.sleep(100);
  }
  const d = summarize(perDelivery);
  const l = summarize(perLine);
  return { deliveryP50Ms: round(d.p50Ms), deliveryP99Ms: round(d.p99Ms), allReachedP50Ms: round(l.p50Ms), allReachedP99Ms: round(l.p99Ms) };
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess();
  try {
    const ws = await keel.workspace(`bench-fanout-${Date.now().toString(36)}`);
    await Bun.sleep(500);
    const rssIdle = keel.rss();

    const one = [await openFollower(keel, ws.id)];
    await waitFollowers(keel, 1);
    const baseline = await measure(keel, ws.id, one, 'one');
    one[0]!.close();
    await waitFollowers(keel, 0);

    const many: Follower[] = [];
    for (let i = 0; i < FOLLOWERS; i += 50) {
      many.push(...(await Promise.all(Array.from({ length: Math.min(50, FOLLOWERS - i) }, () => openFollower(keel, ws.id)))));
    }
    const attached = await waitFollowers(keel, FOLLOWERS);
    await Bun.sleep(500);
    const rssAttached = keel.rss();
    const fan = await measure(keel, ws.id, many, 'many');
    const rssAfterLines = keel.rss();
    for (const f of many) f.close();
    const released = await waitFollowers(keel, 0);

    const result = {
      followers: FOLLOWERS,
      lines: LINES,
      engineStreamsWithFollowers: attached.engineStreams,
      engineStreamsAfterClose: released.engineStreams,
      oneFollower: baseline,
      manyFollowers: fan,
      allReachedP50Ratio: round(fan.allReachedP50Ms / Math.max(1, baseline.allReachedP50Ms)),
      allReachedP99Ratio: round(fan.allReachedP99Ms / Math.max(1, baseline.allReachedP99Ms)),
      rssIdleMiB: round(rssIdle / 2 ** 20, 1),
      rssWithFollowersMiB: round(rssAttached / 2 ** 20, 1),
      rssAfterLinesMiB: round(rssAfterLines / 2 ** 20, 1),
      rssPerFollowerKiB: round((rssAttached - rssIdle) / FOLLOWERS / 1024, 1),
    };
    console.table({ '1 follower': baseline, [`${FOLLOWERS} followers`]: fan });
    console.log(
      `time for a line to reach all: p50 ratio ${result.allReachedP50Ratio}, p99 ratio ${result.allReachedP99Ratio} (vs 1 follower); ` +
        `RSS idle ${result.rssIdleMiB} MiB, with ${FOLLOWERS} followers ${result.rssWithFollowersMiB} MiB (${result.rssPerFollowerKiB} KiB each); ` +
        `engine streams ${result.engineStreamsWithFollowers} while attached, ${result.engineStreamsAfterClose} after`,
    );
    return result;
  } finally {
    await keel.stop();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
