// Log fan-out: N concurrent followers (default 1,000) of one workspace on a Keel server in its own
// process, against the engine's own follower of the same container's log in the same run (a raw
// `GET /containers/{id}/logs?follow=1` on the engine's socket, opened beside Keel's followers). For
// each line written in the workspace, the time from its arrival at the engine's follower to its
// arrival at each of Keel's followers (p50/p99 over all deliveries, and per line until the last one
// has it); the same with 1 follower; and the server's RSS idle, with the followers attached and after
// the lines, per follower. Then the floor, in the same run: the same N followers of a bare Bun server
// (bare-fanout.ts, its own process) that follows the same log on the engine and writes each chunk to
// every socket, parsing nothing. Followers are raw HTTP/1.1 sockets, so the client side stays cheap
// and the numbers are the servers'.
import { openRawStream, round, summarize } from './lib';
import { startKeelProcess, type KeelProcess } from './keel-process';
import type { StreamStats } from '../clients/typescript/src';
import { readFileSync } from 'node:fs';

const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 1000);
const LINES = Number(process.env.BENCH_FANOUT_LINES ?? 50);

/** Epoch milliseconds with sub-millisecond resolution (Date.now() rounds to whole ones). */
const now = () => performance.timeOrigin + performance.now();

interface Follower {
  /** Arrival time (epoch ms) of each marker line. */
  seen: Map<string, number>;
  close(): void;
}

/** Notes the first arrival of every `mark-...` word in the text; answers how much was consumed. */
function marks(seen: Map<string, number>, at: number, text: string): number {
  let from = 0;
  for (;;) {
    const i = text.indexOf('mark-', from);
    if (i < 0) return Math.max(from, text.length - 64);
    const end = text.indexOf('.', i);
    if (end < 0) return i;
    const mark = text.slice(i, end);
    if (!seen.has(mark)) seen.set(mark, at);
    from = end;
  }
}

async function openFollower(base: string, path: string, token: string): Promise<Follower> {
  const seen: Follower['seen'] = new Map();
  const stream = await openRawStream(base, path, token, (at, text) => marks(seen, at, text), 512, now);
  return { seen, close: stream.close };
}

/** N followers, opened 50 at a time. */
async function openFollowers(n: number, open: () => Promise<Follower>) {
  const all: Follower[] = [];
  for (let i = 0; i < n; i += 50) all.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, open))));
  return all;
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;

/** The engine's own follower: the container's log followed on the engine's socket, as `docker logs -f` does. */
async function openEngineFollower(containerId: string): Promise<Follower> {
  const host = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  const seen: Follower['seen'] = new Map();
  let carry = '';
  const handler = {
    data(_s: unknown, d: Buffer) {
      const text = carry + d.toString('latin1');
      carry = text.slice(marks(seen, now(), text));
    },
  };
  const socket = host.startsWith('unix://')
    ? await Bun.connect({ unix: host.slice('unix://'.length), socket: handler })
    : await Bun.connect({ hostname: new URL(host).hostname, port: Number(new URL(host).port), socket: handler });
  socket.write(`GET /containers/${containerId}/logs?follow=1&stdout=1&stderr=1&timestamps=1&tail=0 HTTP/1.1\r\nHost: docker\r\n\r\n`);
  return { seen, close: () => socket.end() };
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

/** Writes LINES marker lines in the workspace; each delivery is timed against the engine's follower. */
async function measure(keel: KeelProcess, wsId: string, engine: Follower, followers: Follower[], tag: string) {
  const perDelivery: number[] = [];
  const perLine: number[] = [];
  const engineLatency: number[] = [];
  for (let i = 0; i < LINES; i++) {
    const mark = `mark-${tag}-${i}`;
    const res = await keel.api(`/api/workspaces/${wsId}/exec`, { method: 'POST', json: { command: `echo ${mark}. > /proc/1/fd/1` } });
    if (res.status !== 200) throw new Error(`exec failed: ${res.status}`);
    const until = Date.now() + 30_000;
    while (!engine.seen.has(mark) || followers.some((f) => !f.seen.has(mark))) {
      if (Date.now() > until) throw new Error(`${mark} did not reach every follower`);
      await Bun.sleep(5);
    }
    const base = engine.seen.get(mark)!;
    const lats = followers.map((f) => f.seen.get(mark)! - base);
    perDelivery.push(...lats);
    perLine.push(Math.max(...lats));
    engineLatency.push(base);
    await Bun.sleep(100);
  }
  const d = summarize(perDelivery);
  const l = summarize(perLine);
  return { afterEngineP50Ms: round(d.p50Ms), afterEngineP99Ms: round(d.p99Ms), afterEngineMaxMs: round(d.maxMs), lastReachedP50Ms: round(l.p50Ms), lastReachedP99Ms: round(l.p99Ms) };
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess();
  try {
    const ws = await keel.workspace(`bench-fanout-${Date.now().toString(36)}`);
    const engine = await openEngineFollower(ws.containerId);
    await Bun.sleep(500);
    const rssIdle = keel.rss();

    const path = `/api/workspaces/${ws.id}/logs?follow=true&tail=0`;
    const one = [await openFollower(keel.url, path, keel.token())];
    await waitFollowers(keel, 1);
    const single = await measure(keel, ws.id, engine, one, 'one');
    one[0]!.close();
    await waitFollowers(keel, 0);
    await Bun.sleep(500);
    const rssBefore = keel.rss();

    const many = await openFollowers(FOLLOWERS, () => openFollower(keel.url, path, keel.token()));
    const attached = await waitFollowers(keel, FOLLOWERS);
    await Bun.sleep(500);
    const rssAttached = keel.rss();
    const fan = await measure(keel, ws.id, engine, many, 'many');
    const rssAfterLines = keel.rss();
    for (const f of many) f.close();
    const released = await waitFollowers(keel, 0);

    // The floor: a bare Bun server fanning the engine's chunks out to as many sockets.
    const bare = Bun.spawn([process.execPath, `${import.meta.dir}/bare-fanout.ts`], { env: { ...process.env, CONTAINER: ws.containerId }, stdout: 'pipe' });
    let floor: Awaited<ReturnType<typeof measure>>;
    let bareIdle: number;
    let bareAttached: number;
    try {
      const reader = bare.stdout.getReader();
      const bareUrl = `http://127.0.0.1:${Number(new TextDecoder().decode((await reader.read()).value).trim())}`;
      reader.releaseLock();
      await Bun.sleep(500);
      bareIdle = rssOf(bare.pid);
      const bareFollowers = await openFollowers(FOLLOWERS, () => openFollower(bareUrl, '/', ''));
      await Bun.sleep(500);
      floor = await measure(keel, ws.id, engine, bareFollowers, 'bare');
      bareAttached = rssOf(bare.pid);
      for (const f of bareFollowers) f.close();
    } finally {
      bare.kill();
    }
    engine.close();

    const mib = (b: number) => round(b / 2 ** 20, 1);
    const result = {
      followers: FOLLOWERS,
      lines: LINES,
      engineStreamsWithFollowers: attached.engineStreams,
      engineStreamsAfterClose: released.engineStreams,
      oneFollower: single,
      manyFollowers: fan,
      bareFloor: floor,
      afterEngineP99OverFloor: round(fan.afterEngineP99Ms / Math.max(0.01, floor.afterEngineP99Ms)),
      rssIdleMiB: mib(rssIdle),
      rssBeforeFollowersMiB: mib(rssBefore),
      rssWithFollowersMiB: mib(rssAttached),
      rssAfterLinesMiB: mib(rssAfterLines),
      rssAddedMiB: mib(Math.max(rssAttached, rssAfterLines) - rssBefore),
      rssPerFollowerKiB: round((Math.max(rssAttached, rssAfterLines) - rssBefore) / FOLLOWERS / 1024, 1),
      bareRssAddedMiB: mib(bareAttached - bareIdle),
    };
    console.table({ '1 follower': single, [`${FOLLOWERS} followers`]: fan, [`bare Bun, ${FOLLOWERS} followers`]: floor });
    console.log(
      `after the engine's own follower: 1 follower p99 ${single.afterEngineP99Ms} ms; ${FOLLOWERS} followers p50 ${fan.afterEngineP50Ms} / p99 ${fan.afterEngineP99Ms} ms (the last of them p99 ${fan.lastReachedP99Ms} ms); ` +
        `RSS ${result.rssBeforeFollowersMiB} MiB before, ${result.rssWithFollowersMiB} with ${FOLLOWERS} followers, ${result.rssAfterLinesMiB} after the lines: +${result.rssAddedMiB} MiB (${result.rssPerFollowerKiB} KiB each); ` +
        `engine streams ${result.engineStreamsWithFollowers} while attached, ${result.engineStreamsAfterClose} after; ` +
        `floor (bare Bun fan-out): p99 ${floor.afterEngineP99Ms} ms after the engine's follower, +${result.bareRssAddedMiB} MiB`,
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
