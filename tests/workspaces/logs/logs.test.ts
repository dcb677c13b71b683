// Workspace logs through HTTP against real `minimal` containers: entry fields, levels, tail, service
// filter, live follow over SSE, fan-out counters and their cleanup, stopped and deleted workspaces.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../helpers/docker';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader, type SseReader } from '../../helpers/sse';
import { closeAndClean, createRunning, errorCode, streamCounters, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let ws = '';

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p.api('workspaces', path, init);

/** A running workspace whose main process has logged that it is ready. */
async function createReady(name: string): Promise<string> {
  const { id } = await createRunning(p, name, { timeoutMs: 90_000 });
  await waitFor('main ready line', async () => (await logs(id)).some((l) => l.message === 'keel: workspace ready'), 10_000);
  return id;
}

interface Entry {
  timestamp: string;
  service: string;
  level: string;
  message: string;
}

async function logs(id: string, query = '', as = 'alice'): Promise<Entry[]> {
  const res = await api(`/api/workspaces/${id}/logs${query}`, { as });
  expect(res.status).toBe(200);
  return ((await res.json()) as { logs: Entry[] }).logs;
}

/** Runs a command in the workspace through the API (writing to /proc/1/fd/N reaches the container's log). */
async function sh(id: string, command: string) {
  const res = await api(`/api/workspaces/${id}/exec`, { method: 'POST', json: { command } });
  expect(res.status).toBe(200);
  return (await res.json()) as { exitCode: number; stdout: string; stderr: string };
}

const say = (id: string, text: string, fd: 1 | 2 = 1) => sh(id, `printf '%s\\n' '${text}' > /proc/1/fd/${fd}`);

const streams = () => streamCounters(p);

async function follow(id: string, query = '', as = 'alice'): Promise<{ res: Response; reader: SseReader; abort: AbortController }> {
  const abort = new AbortController();
  const res = await api(`/api/workspaces/${id}/logs?follow=true${query}`, { as, signal: abort.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  return { res, reader: sseReader(res), abort };
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_SSE_HEARTBEAT_MS: '300' } });
  ws = await createReady('logs-main');
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

describe('log entries', () => {
  test('every entry has an ISO timestamp, the service, a level and the message; the main process is service main', async () => {
    const all = await logs(ws);
    const ready = all.find((l) => l.message === 'keel: workspace ready')!;
    expect(ready).toBeDefined();
    expect(ready.service).toBe('main');
    expect(ready.level).toBe('info');
    expect(ready.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(ready.timestamp) - Date.now())).toBeLessThan(10 * 60_000);
    for (const l of all) expect(Object.keys(l).sort()).toEqual(['level', 'message', 'service', 'timestamp']);
  });

  test('a template service has its own name, and its stderr is a warning', async () => {
    await sh(ws, 'wget -q -O /dev/null http://127.0.0.1:8080/ || true');
    const entry = await waitFor('code-server line', async () => (await logs(ws, '?service=code-server')).find((l) => l.message.includes('response:')), 10_000);
    expect(entry.service).toBe('code-server');
    expect(entry.level).toBe('warn');
  });

  test('stderr naming an error is error, other stderr warn, stdout info', async () => {
    await say(ws, 'levels-out', 1);
    await say(ws, 'levels-warn', 2);
    await say(ws, 'levels: fatal error here', 2);
    const all = await waitFor('the fatal error line', async () => {
      const l = await logs(ws, '?tail=20');
      return l.some((e) => e.message === 'levels: fatal error here') && l;
    }, 10_000);
    expect(all.find((l) => l.message === 'levels-out')!.level).toBe('info');
    expect(all.find((l) => l.message === 'levels-warn')!.level).toBe('warn');
    expect(all.find((l) => l.message === 'levels: fatal error here')!.level).toBe('error');
  });

  test('a structured JSON line keeps its own level and message', async () => {
    await say(ws, '{"level":"error","msg":"structured boom","port":1}', 1);
    await say(ws, '{"level":30,"msg":"pino info"}', 2);
    const all = await waitFor('the pino line', async () => {
      const l = await logs(ws, '?tail=10');
      return l.some((e) => e.message === 'pino info') && l;
    }, 10_000);
    expect(all.find((l) => l.message === 'structured boom')!.level).toBe('error');
    expect(all.find((l) => l.message === 'pino info')!.level).toBe('info');
  });
  test('a line longer than the engine\'s 16 KiB pieces comes back whole', async () => {
    await sh(ws, "{ head -c 40000 /dev/zero | tr '\\0' L; echo; } > /proc/1/fd/1");
    const long = await waitFor('the long line', async () => {
      const [last] = await logs(ws, '?tail=1');
      return last?.message.startsWith('LLL') && last;
    }, 10_000);
    expect(long.message).toBe('L'.repeat(40000));
  });
});

describe('tail and service', () => {
  test('tail returns exactly the last lines, oldest first', async () => {
    for (const n of [1, 2, 3]) await say(ws, `tail-${n}`);
    await waitFor('tail-3', async () => (await logs(ws, '?tail=1'))[0]?.message === 'tail-3', 10_000);
    const last = await logs(ws, '?tail=2');
    expect(last.map((l) => l.message)).toEqual(['tail-2', 'tail-3']);
    expect(await logs(ws, '?tail=0')).toEqual([]);
  });

  test('tail defaults to 50', async () => {
    await sh(ws, 'i=0; while [ $i -lt 60 ]; do echo "bulk-$i"; i=$((i+1)); done > /proc/1/fd/1');
    const all = await waitFor('bulk-59', async () => {
      const l = await logs(ws);
      return l.at(-1)?.message === 'bulk-59' && l;
    }, 10_000);
    expect(all.length).toBe(50);
    expect(all[0]!.message).toBe('bulk-10');
  });

  test('tail out of range or not a number is 400 INVALID_REQUEST', async () => {
    for (const q of ['?tail=5001', '?tail=-1', '?tail=abc', '?tail=1.5']) {
      const res = await api(`/api/workspaces/${ws}/logs${q}`);
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe('INVALID_REQUEST');
    }
    const ok = await api(`/api/workspaces/${ws}/logs?tail=5000`);
    expect(ok.status).toBe(200);
  });

  test('service restricts lines to that service, and tail counts after the filter', async () => {
    const main = await logs(ws, '?service=main&tail=3');
    expect(main.length).toBe(3);
    expect(main.every((l) => l.service === 'main')).toBe(true);
    // The code-server line is older than 60+ main lines: the filtered tail still finds it.
    const cs = await logs(ws, '?service=code-server&tail=1');
    expect(cs.length).toBe(1);
    expect(cs[0]!.service).toBe('code-server');
    expect(await logs(ws, '?service=no-such-service')).toEqual([]);
  });
});

describe('follow', () => {
  test('the stream sends the tail, then a line written in the workspace as one data line of JSON', async () => {
    const f = await follow(ws, '&tail=1');
    const first = await f.reader.nextEvent();
    const tailEntry = JSON.parse(first!.data!) as Entry;
    expect(tailEntry.service).toBeDefined();
    await say(ws, 'live-line-1');
    const frames = await f.reader.collect((fr) => fr.data!.includes('live-line-1'));
    const live = JSON.parse(frames.at(-1)!.data!) as Entry;
    expect(live).toMatchObject({ service: 'main', level: 'info', message: 'live-line-1' });
    expect(frames.at(-1)!.event).toBeUndefined();
    f.abort.abort();
  });

  test('an idle stream gets keep-alive comments', async () => {
    const f = await follow(ws, '&tail=0');
    const comments: string[] = [];
    for (let i = 0; i < 4 && !comments.includes('keep-alive'); i++) {
      const fr = await f.reader.next(3000);
      if (fr?.comment) comments.push(fr.comment);
    }
    expect(comments).toContain('keep-alive');
    f.abort.abort();
  });

  test('follow with service only streams that service', async () => {
    const f = await follow(ws, '&tail=0&service=code-server');
    await say(ws, 'not-for-code-server');
    await sh(ws, 'wget -q -O /dev/null http://127.0.0.1:8080/ || true');
    const ev = await f.reader.nextEvent();
    const entry = JSON.parse(ev!.data!) as Entry;
    expect(entry.service).toBe('code-server');
    f.abort.abort();
  });

  test('many followers share one engine stream, and disconnecting releases it and every follower', async () => {
    await waitFor('earlier streams released', async () => {
      const s = await streams();
      return s.followers === 0 && s.engineStreams === 0;
    }, 10_000);
    const fs = await Promise.all([1, 2, 3].map(() => follow(ws, '&tail=1')));
    // The tail event comes once a follower has joined the live stream.
    for (const f of fs) expect(await f.reader.nextEvent()).not.toBeNull();
    const s = await streams();
    expect(s.followers).toBe(3);
    expect(s.engineStreams).toBe(1);
    expect(s.workspaces).toEqual([{ workspaceId: ws, followers: 3 }]);
    await say(ws, 'fan-out-line');
    for (const f of fs) {
      const ev = await f.reader.collect((fr) => fr.data!.includes('fan-out-line'));
      expect(ev.length).toBeGreaterThan(0);
    }
    fs[0]!.abort.abort();
    await waitFor('one follower gone', async () => (await streams()).followers === 2, 5000);
    expect((await streams()).engineStreams).toBe(1);
    for (const f of fs.slice(1)) f.abort.abort();
    const after = await waitFor('all released', async () => {
      const x = await streams();
      return x.followers === 0 && x.engineStreams === 0 && x;
    }, 5000);
    expect(after.workspaces).toEqual([]);
  });

  test('the stream counters are for admins only', async () => {
    const res = await api('/api/system/streams');
    expect(res.status).toBe(403);
    expect(await errorCode(res)).toBe('FORBIDDEN');
  });

  test('a follower that does not read is dropped with a final event, while one that reads keeps streaming', async () => {
    // A client that stops reading: nc writes into a pipe whose reader waits for a flag file, so nc
    // blocks, stops reading the socket, the server's send buffer fills, the shared stream waits for
    // it, and after 10 s of nothing taken Keel drops it; the other follower then gets the rest.
    const url = new URL(p.url('workspaces'));
    const dir = mkdtempSync(join(tmpdir(), 'keel-slow-'));
    const request = `GET /api/workspaces/${ws}/logs?follow=true&tail=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${p.token('alice')}\r\n\r\n`;
    writeFileSync(join(dir, 'request'), request);
    const slow = Bun.spawn(
      ['sh', '-c', `(cat request; sleep 60) | busybox nc ${url.hostname} ${url.port} | { while [ ! -e go ]; do sleep 0.1; done; cat > out; }`],
      { cwd: dir, stdout: 'ignore', stderr: 'ignore' },
    );
    await waitFor('slow follower attached', async () => (await streams()).followers === 1, 5000);
    const reader = await follow(ws, '&tail=1');
    expect(await reader.reader.nextEvent()).not.toBeNull();
    expect((await streams()).followers).toBe(2);
    // The reader reads all along, as a healthy client does.
    const collecting = reader.reader.collect((f) => f.event !== undefined || f.data!.includes('after-burst'), 60_000);
    // ~24 MB of log lines, far more than the socket buffers and the 1 MiB bound hold.
    await sh(ws, "{ head -c 24000000 /dev/zero | tr '\\0' x | fold -w 2000; echo; } > /proc/1/fd/1; echo after-burst > /proc/1/fd/1");
    await waitFor('slow follower dropped', async () => (await streams()).followers === 1, 40_000);
    // The reader drains everything and sees the line after the burst: it was not dropped.
    const frames = await collecting;
    expect(frames.at(-1)!.event).toBeUndefined();
    expect(frames.at(-1)!.data).toContain('after-burst');
    // Once the slow client reads again, its last event says why it was dropped, then the stream ends.
    writeFileSync(join(dir, 'go'), '');
    await waitFor('dropped event', async () => existsSync(join(dir, 'out')) && readFileSync(join(dir, 'out'), 'utf8').includes('event: dropped'), 10_000);
    expect(readFileSync(join(dir, 'out'), 'utf8').slice(-300)).toContain('event: dropped\ndata: {"reason":"slow-reader"');
    slow.kill();
    rmSync(dir, { recursive: true, force: true });
    reader.abort.abort();
    await waitFor('all released', async () => {
      const s = await streams();
      return s.followers === 0 && s.engineStreams === 0;
    }, 5000);
  }, 90_000);

  test('a follower that stops reading for a few seconds is waited for, not dropped, and gets every line', async () => {
    // The same stalled client as above, which reads again after 3 s: by then it has left megabytes
    // unread, and the shared stream has waited for it instead of dropping it.
    const url = new URL(p.url('workspaces'));
    const dir = mkdtempSync(join(tmpdir(), 'keel-pause-'));
    const request = `GET /api/workspaces/${ws}/logs?follow=true&tail=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${p.token('alice')}\r\n\r\n`;
    writeFileSync(join(dir, 'request'), request);
    // A session of its own (setsid keeps the pid), so the whole pipeline, nc included, ends with its group.
    const paused = Bun.spawn(
      ['setsid', 'sh', '-c', `(cat request; sleep 60) | busybox nc ${url.hostname} ${url.port} | { while [ ! -e go ]; do sleep 0.1; done; cat > out; }`],
      { cwd: dir, stdout: 'ignore', stderr: 'ignore' },
    );
    try {
      await waitFor('paused follower attached', async () => (await streams()).followers === 1, 5000);
      // ~8 MB in 4,000 lines, far more than the socket buffers hold, then a last line.
      await sh(ws, "{ head -c 8000000 /dev/zero | tr '\\0' y | fold -w 2000; echo; } > /proc/1/fd/1; echo after-pause > /proc/1/fd/1");
      await Bun.sleep(3000);
      expect((await streams()).followers).toBe(1);
      writeFileSync(join(dir, 'go'), '');
      const out = () => (existsSync(join(dir, 'out')) ? readFileSync(join(dir, 'out'), 'utf8') : '');
      await waitFor('the line after the burst', async () => out().includes('after-pause'), 30_000);
      const text = out();
      expect(text).not.toContain('event: dropped');
      expect(text.split('\n').filter((l) => l.startsWith('data:') && l.includes('y'.repeat(2000))).length).toBe(4000);
    } finally {
      process.kill(-paused.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
    await waitFor('all released', async () => (await streams()).followers === 0, 5000);
  }, 90_000);
});

describe('access and lifecycle', () => {
  test('another actor gets 404 WORKSPACE_NOT_FOUND, for JSON and follow alike', async () => {
    for (const q of ['', '?follow=true']) {
      const res = await api(`/api/workspaces/${ws}/logs${q}`, { as: 'bob' });
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe('WORKSPACE_NOT_FOUND');
    }
    const admin = await api(`/api/workspaces/${ws}/logs?tail=1`, { as: 'admin' });
    expect(admin.status).toBe(200);
  });

  test('an unknown workspace is 404 WORKSPACE_NOT_FOUND', async () => {
    const res = await api('/api/workspaces/ws_nope/logs');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('WORKSPACE_NOT_FOUND');
  });

  test('deleting a followed workspace ends the stream cleanly with an end event', async () => {
    const id = await createReady('logs-deleted');
    const f = await follow(id, '&tail=0');
    await f.reader.next(); // ": connected"
    const del = await api(`/api/workspaces/${id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    const frames = await f.reader.collect((fr) => fr.event === 'end', 30_000);
    expect(frames.at(-1)!.event).toBe('end');
    expect(['deleted', 'stopped']).toContain((JSON.parse(frames.at(-1)!.data!) as { reason: string }).reason);
    expect(await f.reader.nextEvent(5000)).toBeNull();
    await waitFor('released after delete', async () => {
      const s = await streams();
      return s.followers === 0 && s.engineStreams === 0;
    }, 5000);
  }, 120_000);

  test('a follow stream carries on across a restart of the workspace', async () => {
    const f = await follow(ws, '&tail=1&service=main');
    expect(await f.reader.nextEvent()).not.toBeNull();
    const res = await api(`/api/workspaces/${ws}/restart`, { method: 'POST' });
    expect(res.status).toBe(200);
    // The main process starts again and says so, on the same stream, with no end event before it.
    const frames = await f.reader.collect((fr) => fr.event !== undefined || fr.data!.includes('keel: workspace ready'), 60_000);
    expect(frames.at(-1)!.event).toBeUndefined();
    expect((JSON.parse(frames.at(-1)!.data!) as Entry).message).toBe('keel: workspace ready');
    await waitStatus(p, ws, 'running');
    await say(ws, 'after-restart');
    const more = await f.reader.collect((fr) => fr.event !== undefined || fr.data!.includes('after-restart'), 10_000);
    expect(more.at(-1)!.data).toContain('after-restart');
    expect((await streams()).engineStreams).toBe(1);
    f.abort.abort();
  }, 90_000);

  test('logs of a stopped workspace stay readable, and follow on it sends the tail then end', async () => {
    await say(ws, 'before-stop');
    await waitFor('before-stop', async () => (await logs(ws, '?tail=1'))[0]?.message === 'before-stop', 10_000);
    const stop = await api(`/api/workspaces/${ws}/stop?force=true`, { method: 'POST' });
    expect(stop.status).toBe(200);
    await waitStatus(p, ws, 'stopped');
    expect((await logs(ws, '?tail=5')).map((l) => l.message)).toContain('before-stop');
    const f = await follow(ws, '&tail=1&service=main');
    const frames = await f.reader.collect((fr) => fr.event === 'end');
    expect(frames.length).toBe(2);
    expect((JSON.parse(frames[0]!.data!) as Entry).service).toBe('main');
    expect(JSON.parse(frames[1]!.data!)).toEqual({ reason: 'not-running' });
    expect(await f.reader.nextEvent(5000)).toBeNull();
  }, 60_000);
});
