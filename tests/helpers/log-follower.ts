// Follows a workspace's logs (SSE) from a process of its own and digests what arrives: a test process
// pausing to collect a whole suite's garbage would read too slowly and be dropped by Keel as a slow
// reader (the 1 MiB follower backlog), which is Keel's rule working, not what such a test measures.
// Started as a script by followLogs (no imports: it stays light).

export interface FollowReport {
  /** An event other than a log entry (`dropped`, `end`), if one came. */
  event?: string;
  /** Byte sizes of the entries before the `until` line, in order. */
  sizes: number[];
  timestamps: string[];
  services: string[];
  bytes: number;
  sha256: string;
}

/** Opens the follow at `url` with `token`; the report comes once the entry whose message is `until` arrived. */
export async function followLogs(url: string, token: string, until: string): Promise<{ report: Promise<FollowReport> }> {
  const proc = Bun.spawn([process.execPath, import.meta.path], {
    env: { ...process.env, KEEL_FOLLOW_URL: url, KEEL_FOLLOW_TOKEN: token, KEEL_FOLLOW_UNTIL: until },
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const reader = proc.stdout.getReader();
  const dec = new TextDecoder();
  let out = '';
  while (!out.includes('\n')) {
    const r = await reader.read();
    if (r.done) throw new Error(`the log follower exited with ${await proc.exited}`);
    out += dec.decode(r.value, { stream: true });
  }
  const report = (async () => {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      out += dec.decode(r.value, { stream: true });
    }
    if ((await proc.exited) !== 0) throw new Error(`the log follower failed: ${out}`);
    return JSON.parse(out.split('\n')[1]!) as FollowReport;
  })();
  return { report };
}

if (import.meta.main) {
  const utf8 = new TextEncoder();
  const res = await fetch(process.env.KEEL_FOLLOW_URL!, { headers: { authorization: `Bearer ${process.env.KEEL_FOLLOW_TOKEN}` } });
  if (res.status !== 200) throw new Error(`follow answered ${res.status}`);
  const until = process.env.KEEL_FOLLOW_UNTIL!;
  const report: FollowReport = { sizes: [], timestamps: [], services: [], bytes: 0, sha256: '' };
  const hash = new Bun.CryptoHasher('sha256');
  const dec = new TextDecoder();
  let buf = '';
  let started = false;
  outer: for await (const chunk of res.body!) {
    buf += dec.decode(chunk, { stream: true });
    let end: number;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event: string | undefined;
      let data = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith(':') && !started) {
          started = true; // `: connected`: the follow is open, the writer may start
          process.stdout.write('ready\n');
        } else if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trimStart();
      }
      if (!data && !event) continue;
      if (event) {
        report.event = event;
        break outer;
      }
      const e = JSON.parse(data) as { timestamp: string; service: string; message: string };
      if (e.message === until) break outer;
      const b = utf8.encode(e.message);
      hash.update(b);
      report.bytes += b.byteLength;
      report.sizes.push(b.byteLength);
      report.timestamps.push(e.timestamp);
      report.services.push(e.service);
    }
  }
  report.sha256 = hash.digest('hex');
  // Repeated values stay small in the report: one timestamp and one service are expected.
  report.timestamps = [...new Set(report.timestamps)];
  report.services = [...new Set(report.services)];
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exit(0);
}
