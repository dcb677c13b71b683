// Start-up binds every service's port before it loads the services: /health answers while the rest
// of start-up runs, and a request to a route waits for its service instead of being refused.
import { expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_SECRET } from '../helpers/platform';
import { BUN, ROOT } from '../helpers/process';

/** Ports free right now (bound with 0, then let go), so the test can knock before Keel logs them. */
function freePorts(n: number): number[] {
  const servers = Array.from({ length: n }, () => Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } }));
  const ports = servers.map((s) => s.port);
  for (const s of servers) s.stop(true);
  return ports;
}

test('every service answers /health before start-up ends, and a route asked meanwhile is answered once its service is up', async () => {
  const [workspaces, catalog, preview] = freePorts(3);
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-early-'));
  const proc = Bun.spawn([BUN, 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      APP_LOG_LEVEL: 'info',
      APP_API_SECRET: TEST_SECRET,
      APP_DATA_DIR: dataDir,
      APP_SERVICES: 'workspaces,catalog',
      APP_WORKSPACES_PORT: String(workspaces),
      APP_CATALOG_PORT: String(catalog),
      APP_PREVIEW_PORT: String(preview),
    },
    stdout: 'ignore',
    stderr: 'pipe',
  });
  let log = '';
  const reading = (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) log += dec.decode(chunk, { stream: true });
  })();
  const listening = () => (log.match(/"msg":"service listening"/g) ?? []).length;
  try {
    // Knock until each port answers; note how many services had logged "service listening" then.
    const answeredBefore: Record<number, number> = {};
    let routeAnswer: Promise<Response> | undefined;
    const deadline = Date.now() + 30_000;
    while (Object.keys(answeredBefore).length < 2 && Date.now() < deadline && proc.exitCode === null) {
      for (const port of [workspaces!, catalog!]) {
        if (port in answeredBefore) continue;
        const seen = listening();
        const res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        if (res?.status !== 200) continue;
        expect(await res.json()).toMatchObject({ status: 'ok', version: expect.any(String) });
        answeredBefore[port] = seen;
        // A route asked while start-up may still run: it must wait, not fail.
        if (port === catalog) routeAnswer ??= fetch(`http://127.0.0.1:${catalog}/works`);
      }
      await Bun.sleep(2);
    }
    expect(Object.keys(answeredBefore)).toHaveLength(2);
    // Both ports answered before any service had logged "service listening" (before, a service's
    // port was bound only after the services before it had started).
    expect(answeredBefore).toEqual({ [workspaces!]: 0, [catalog!]: 0 });
    const res = await routeAnswer!;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ works: [] });
  } finally {
    proc.kill('SIGTERM');
    await proc.exited;
    await reading;
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 60_000);
