// Workspace event stream fan-out: N open dashboards (default 500 followers of GET /api/events, one
// actor) on a Keel server in its own process. For each event of a real workspace stopped and started
// through the API, the time from the event's timestamp (taken as Keel publishes it) to its arrival
// at each follower (p50/p99 over all deliveries) and until the last follower has it (p50/p99 over
// events), against the same with one follower; and the server's RSS idle and with the followers
// attached. Followers are raw HTTP/1.1 sockets, so the client side stays cheap and the numbers are Keel's.
import { openRawStream, round, summarize } from './lib';
import { startKeelProcess, type KeelProcess } from './keel-process';

const FOLLOWERS = Number(process.env.BENCH_EVENT_FOLLOWERS ?? 500);
const CYCLES = Number(process.env.BENCH_EVENT_CYCLES ?? 5);
const FRAME = /id: (\d+)\nevent: workspace\ndata: (\{[^\n]*\})\n/g;

interface Follower {
  /** Arrival (epoch ms) and publish timestamp of each event, by SSE id. */
  seen: Map<number, { at: number; publishedAt: number; event: string }>;
  close(): void;
}

async function openFollower(keel: KeelProcess): Promise<Follower> {
  const seen: Follower['seen'] = new Map();
  const stream = await openRawStream(keel.url, '/api/events', keel.token(), (at, text) => {
    let end = 0;
    for (const m of text.matchAll(FRAME)) {
      const payload = JSON.parse(m[2]!) as { event: string; timestamp: string };
      seen.set(Number(m[1]), { at, publishedAt: Date.parse(payload.timestamp), event: payload.event });
      end = m.index! + m[0].length;
    }
    return end;
  });
  return { seen, close: stream.close };
}

/** Waits until every follower has an event named `event` with an id above `after`; its id. */
async function reached(followers: Follower[], event: string, after: number): Promise<number> {
  const until = Date.now() + 60_000;
  for (;;) {
    const ids = followers.map((f) => [...f.seen].find(([id, e]) => id > after && e.event === event)?.[0]);
    if (ids.every((id) => id !== undefined)) return Math.max(...(ids as number[]));
    if (Date.now() > until) throw new Error(`${event} did not reach every follower`);
    await Bun.sleep(5);
  }
}

/** Stops and starts the workspace CYCLES times; the delivery of each of those events to every follower. */
async function measure(keel: KeelProcess, wsId: string, followers: Follower[]) {
  const perDelivery: number[] = [];
  const perEvent: number[] = [];
  let last = Math.max(0, ...followers.flatMap((f) => [...f.seen.keys()]));
  for (let i = 0; i < CYCLES; i++) {
    for (const [action, event] of [['stop', 'workspace.stopped'], ['start', 'workspace.started']] as const) {
      const res = await keel.api(`/api/workspaces/${wsId}/${action}`, { method: 'POST' });
      if (res.status !== 200) throw new Error(`${action} failed: ${res.status}`);
      const id = await reached(followers, event, last);
      const lats = followers.map((f) => {
        const e = [...f.seen].find(([k, v]) => k > last && v.event === event)![1];
        return e.at - e.publishedAt;
      });
      perDelivery.push(...lats);
      perEvent.push(Math.max(...lats));
      last = id;
    }
  }
  const d = summarize(perDelivery);
  const e = summarize(perEvent);
  return { events: perEvent.length, deliveryP50Ms: round(d.p50Ms), deliveryP99Ms: round(d.p99Ms), allReachedP50Ms: round(e.p50Ms), allReachedP99Ms: round(e.p99Ms) };
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess();
  try {
    const ws = await keel.workspace(`bench-events-${Date.now().toString(36)}`);
    await Bun.sleep(500);
    const rssIdle = keel.rss();

    const one = [await openFollower(keel)];
    const baseline = await measure(keel, ws.id, one);
    one[0]!.close();

    const many: Follower[] = [];
    for (let i = 0; i < FOLLOWERS; i += 50) {
      many.push(...(await Promise.all(Array.from({ length: Math.min(50, FOLLOWERS - i) }, () => openFollower(keel)))));
    }
    await Bun.sleep(1000);
    const rssAttached = keel.rss();
    const fan = await measure(keel, ws.id, many);
    for (const f of many) f.close();

    const result = {
      followers: FOLLOWERS,
      oneFollower: baseline,
      manyFollowers: fan,
      allReachedP50Ratio: round(fan.allReachedP50Ms / Math.max(1, baseline.allReachedP50Ms)),
      allReachedP99Ratio: round(fan.allReachedP99Ms / Math.max(1, baseline.allReachedP99Ms)),
      rssIdleMiB: round(rssIdle / 2 ** 20, 1),
      rssWithFollowersMiB: round(rssAttached / 2 ** 20, 1),
      rssPerFollowerKiB: round((rssAttached - rssIdle) / FOLLOWERS / 1024, 1),
    };
    console.table({ '1 follower': baseline, [`${FOLLOWERS} followers`]: fan });
    console.log(
      `time for an event to reach all: p50 ratio ${result.allReachedP50Ratio}, p99 ratio ${result.allReachedP99Ratio} (vs 1 follower, max(1 ms)); ` +
        `RSS idle ${result.rssIdleMiB} MiB, with ${FOLLOWERS} followers ${result.rssWithFollowersMiB} MiB (${result.rssPerFollowerKiB} KiB each)`,
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
