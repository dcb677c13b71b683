// Previews: what Keel's preview listener adds to a page. One small page (300 bytes) from a server in
// a workspace, loaded by wrk (a C client in its own process) through a preview
// link (the link's Host header sent to the listener, as a browser sends it for `<label>.localhost`)
// and from the same httpd reached directly at the container's address. The two alternate in short
// rounds and each round is compared with its own direct run, so a change in the machine's load
// (other engineers' tests on the same two cores) reaches both sides of a comparison; the figures are
// the medians of the rounds' comparisons. The aim (CONTRACT.md) is under 1 ms added at the median
// and at least 80 % of the direct throughput.
//
// The server (BENCH_PREVIEWS_UPSTREAM): `bun` (default), a Bun.serve in a `bun-typescript` workspace,
// keeps its connections open as dev servers (Vite, Next.js) do, so Keel reuses its connections to it;
// `httpd`, busybox httpd in a `minimal` workspace, closes every connection, so each request through
// the preview opens one from the host (docs/benchmarks.md: what that costs once TIME_WAIT fills up).
import { median, round } from './lib';
import { startKeelProcess } from './keel-process';
import { ensureWrk, wrk, type WrkResult } from './wrk';

const SECONDS = Number(process.env.BENCH_PREVIEWS_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_PREVIEWS_ROUNDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_PREVIEWS_CONNECTIONS ?? 8);
const UPSTREAM = process.env.BENCH_PREVIEWS_UPSTREAM === 'httpd' ? 'httpd' : 'bun';
const PAGE = '<h1>bench</h1>\n'.repeat(20);
const BUN_SERVER = `const page = ${JSON.stringify(PAGE)};
Bun.serve({ port: 8090, hostname: '0.0.0.0', fetch: () => new Response(page, { headers: { 'content-type': 'text/html' } }) });
`;

export async function run(): Promise<Record<string, unknown>> {
  ensureWrk();
  const keel = await startKeelProcess();
  try {
    const ws = await keel.workspace(`bench-previews-${Date.now().toString(36)}`, UPSTREAM === 'bun' ? 'bun-typescript' : 'minimal');
    const api = (path: string, init: RequestInit & { json?: unknown } = {}) => keel.api(`/api/workspaces/${ws.id}${path}`, init);
    if (UPSTREAM === 'bun') {
      await api('/files?path=server.ts', { method: 'PUT', body: BUN_SERVER });
      await api('/processes', { method: 'POST', json: { command: 'exec bun /workspace/server.ts' } });
    } else {
      await api('/files?path=site/index.html', { method: 'PUT', body: PAGE });
      await api('/processes', { method: 'POST', json: { command: 'exec httpd -f -p 8090 -c /dev/null -h /workspace/site' } });
    }
    const link = (await (await api('/previews', { method: 'POST', json: { port: 8090 } })).json()) as { url: string };
    const through = new URL(link.url);
    const inspect = Bun.spawnSync(['docker', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', ws.containerId]);
    const direct = `http://${inspect.stdout.toString().trim()}:8090`;
    // wrk resolves names with the system resolver, which knows no `*.localhost`: the listener's address and the link's Host.
    // `Host` capitalised: wrk adds its own Host header unless it finds one spelt so.
    const preview = { url: `http://127.0.0.1:${through.port}`, page: `${through.pathname}index.html`, headers: { Host: through.host } };
    // The server starts with its process: wait for its first page, then warm up.
    const until = Date.now() + 30_000;
    for (let ok = 0; ok < 50; ) {
      const r = await fetch(preview.url + preview.page, { headers: preview.headers });
      await r.arrayBuffer();
      if (r.status === 200) ok++;
      else if (Date.now() > until) throw new Error(`preview bench: ${r.status}`);
      else await Bun.sleep(200);
    }

    // A bare Bun proxy (bare-proxy.ts) to the same server: what any proxy on this runtime costs.
    const bare = Bun.spawn([process.execPath, `${import.meta.dir}/bare-proxy.ts`], { env: { ...process.env, TARGET: direct }, stdout: 'pipe' });
    const reader = bare.stdout.getReader();
    const barePort = Number(new TextDecoder().decode((await reader.read()).value).trim());
    reader.releaseLock();
    const viaBare = (connections: number) => wrk({ url: `http://127.0.0.1:${barePort}`, paths: ['/index.html'], connections, seconds: SECONDS });

    // Each round: one page at a time (what a page costs: the latency figure), then CONNECTIONS at
    // once (the throughput figure), each directly, through the preview and through the bare proxy, back to back.
    const runs = { preview: [] as WrkResult[], direct: [] as WrkResult[], bare: [] as WrkResult[], previewOne: [] as WrkResult[], directOne: [] as WrkResult[], bareOne: [] as WrkResult[] };
    const viaPreview = (connections: number) => wrk({ url: preview.url, paths: [preview.page], connections, seconds: SECONDS, headers: preview.headers });
    const viaDirect = (connections: number) => wrk({ url: direct, paths: ['/index.html'], connections, seconds: SECONDS });
    for (let i = 0; i < ROUNDS; i++) {
      runs.directOne.push(await viaDirect(1));
      runs.previewOne.push(await viaPreview(1));
      runs.bareOne.push(await viaBare(1));
      runs.direct.push(await viaDirect(CONNECTIONS));
      runs.preview.push(await viaPreview(CONNECTIONS));
      runs.bare.push(await viaBare(CONNECTIONS));
    }
    bare.kill();
    // Pooled over all rounds, for the table.
    const merge = (xs: WrkResult[]) => ({
      rps: round(xs.reduce((a, x) => a + x.requests, 0) / xs.reduce((a, x) => a + x.seconds, 0)),
      p50Ms: round(median(xs.map((x) => x.p50Ms)), 3),
      p99Ms: round(Math.max(...xs.map((x) => x.p99Ms)), 3),
    });
    const perRound = runs.preview.map((p, i) => ({
      oneAtATimeP50Ms: { preview: runs.previewOne[i]!.p50Ms, direct: runs.directOne[i]!.p50Ms },
      addedP50Ms: round(runs.previewOne[i]!.p50Ms - runs.directOne[i]!.p50Ms, 3),
      rps: { preview: round(p.rps), direct: round(runs.direct[i]!.rps) },
      rpsRatio: round(p.rps / runs.direct[i]!.rps, 3),
      bareAddedP50Ms: round(runs.bareOne[i]!.p50Ms - runs.directOne[i]!.p50Ms, 3),
      bareRpsRatio: round(runs.bare[i]!.rps / runs.direct[i]!.rps, 3),
      addedP50MsAtConcurrency: round(p.p50Ms - runs.direct[i]!.p50Ms, 3),
    }));
    const result = {
      upstream: UPSTREAM,
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      oneAtATime: { preview: merge(runs.previewOne), bareProxy: merge(runs.bareOne), direct: merge(runs.directOne) },
      concurrent: { preview: merge(runs.preview), bareProxy: merge(runs.bare), direct: merge(runs.direct) },
      addedP50Ms: round(median(perRound.map((r) => r.addedP50Ms)), 3),
      rpsRatio: round(median(perRound.map((r) => r.rpsRatio)), 3),
      addedP50MsAtConcurrency: round(median(perRound.map((r) => r.addedP50MsAtConcurrency)), 3),
      bareProxy: { addedP50Ms: round(median(perRound.map((r) => r.bareAddedP50Ms)), 3), rpsRatio: round(median(perRound.map((r) => r.bareRpsRatio)), 3) },
      perRound,
    };
    console.table({
      'one at a time, through the preview': result.oneAtATime.preview,
      'one at a time, bare Bun proxy': result.oneAtATime.bareProxy,
      'one at a time, directly': result.oneAtATime.direct,
      [`${CONNECTIONS} at once, through the preview`]: result.concurrent.preview,
      [`${CONNECTIONS} at once, bare Bun proxy`]: result.concurrent.bareProxy,
      [`${CONNECTIONS} at once, directly`]: result.concurrent.direct,
    });
    console.table(perRound.map((r) => ({ addedP50Ms: r.addedP50Ms, rpsRatio: r.rpsRatio, addedP50MsAtConcurrency: r.addedP50MsAtConcurrency, bareAddedP50Ms: r.bareAddedP50Ms, bareRpsRatio: r.bareRpsRatio })));
    console.log(
      `median of the rounds: ${result.addedP50Ms} ms added at the median (one page at a time), ${result.addedP50MsAtConcurrency} ms at ${CONNECTIONS} at once; ` +
        `${Math.round(result.rpsRatio * 100)} % of the direct throughput (a bare Bun proxy: ${result.bareProxy.addedP50Ms} ms, ${Math.round(result.bareProxy.rpsRatio * 100)} %)`,
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
