// Previews: what Keel's preview listener adds to a page. One small page (300 bytes) from busybox
// httpd in a `minimal` workspace, loaded by wrk (a C client in its own process) through a preview
// link (the link's Host header sent to the listener, as a browser sends it for `<label>.localhost`)
// and from the same httpd reached directly at the container's address. The two are interleaved in
// rounds so a change in the machine's load reaches both; the aim (CONTRACT.md) is under 1 ms added
// at the median and at least 80 % of the direct throughput.
import { round } from './lib';
import { startKeelProcess } from './keel-process';
import { ensureWrk, wrk, type WrkResult } from './wrk';

const SECONDS = Number(process.env.BENCH_PREVIEWS_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_PREVIEWS_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_PREVIEWS_CONNECTIONS ?? 8);

export async function run(): Promise<Record<string, unknown>> {
  ensureWrk();
  const keel = await startKeelProcess();
  try {
    const ws = await keel.workspace(`bench-previews-${Date.now().toString(36)}`);
    const api = (path: string, init: RequestInit & { json?: unknown } = {}) => keel.api(`/api/workspaces/${ws.id}${path}`, init);
    await api('/files?path=site/index.html', { method: 'PUT', body: '<h1>bench</h1>\n'.repeat(20) });
    await api('/processes', { method: 'POST', json: { command: 'exec httpd -f -p 8090 -c /dev/null -h /workspace/site' } });
    const link = (await (await api('/previews', { method: 'POST', json: { port: 8090 } })).json()) as { url: string };
    const through = new URL(link.url);
    const inspect = Bun.spawnSync(['docker', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', ws.containerId]);
    const direct = `http://${inspect.stdout.toString().trim()}:8090`;
    // wrk resolves names with the system resolver, which knows no `*.localhost`: the listener's address and the link's Host.
    const preview = { url: `http://127.0.0.1:${through.port}`, page: `${through.pathname}index.html`, headers: { host: through.host } };
    for (let i = 0; i < 50; i++) {
      const r = await fetch(preview.url + preview.page, { headers: preview.headers });
      if (r.status !== 200) throw new Error(`preview bench: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    }

    const runs = { preview: [] as WrkResult[], direct: [] as WrkResult[] };
    for (let i = 0; i < ROUNDS; i++) {
      runs.direct.push(await wrk({ url: direct, paths: ['/index.html'], connections: CONNECTIONS, seconds: SECONDS }));
      runs.preview.push(await wrk({ url: preview.url, paths: [preview.page], connections: CONNECTIONS, seconds: SECONDS, headers: preview.headers }));
    }
    // Throughput over all rounds; the median of the rounds' medians.
    const merge = (xs: WrkResult[]) => ({
      rps: round(xs.reduce((a, x) => a + x.requests, 0) / xs.reduce((a, x) => a + x.seconds, 0)),
      p50Ms: round([...xs.map((x) => x.p50Ms)].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!, 3),
      p99Ms: round(Math.max(...xs.map((x) => x.p99Ms)), 3),
    });
    const pv = merge(runs.preview);
    const dr = merge(runs.direct);
    const result = {
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      preview: pv,
      direct: dr,
      addedP50Ms: round(pv.p50Ms - dr.p50Ms, 3),
      rpsRatio: round(pv.rps / dr.rps, 3),
      perRound: runs.preview.map((p, i) => ({ previewRps: round(p.rps), directRps: round(runs.direct[i]!.rps), previewP50Ms: p.p50Ms, directP50Ms: runs.direct[i]!.p50Ms })),
    };
    console.table({ 'through the preview': pv, 'the workspace directly': dr });
    console.table(result.perRound);
    console.log(`added at the median: ${result.addedP50Ms} ms; throughput: ${Math.round(result.rpsRatio * 100)} % of direct`);
    return result;
  } finally {
    await keel.stop();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
