// Tenants apart on the network, through HTTP and the real engine: each workspace on a bridge of its
// own; no workspace reaches another (by container IP, or through a port published on the host),
// whoever owns them; none reaches a listener on the Keel host (bridge gateway, the host's primary
// address, docker0) nor metadata addresses; Keel's rules and the network go with the workspace.
// Probes (busybox nc) run inside the workspaces through Keel's exec API, as a tenant would run them. Each
// refusal is checked against a control that shows the target does answer where it is allowed to.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { networkInterfaces } from 'node:os';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect } from '../../helpers/docker';
import { closeAndClean, createRunning } from '../../helpers/workspaces';

let p: TestPlatform;
let alice1: any;
let alice2: any;
let bob: any;
let hostListener: ReturnType<typeof Bun.serve>;

/** The host's primary IPv4 address (not loopback, not a bridge or veth of the engine). */
function primaryIp(): string {
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    if (/^(docker|br-|veth|lo)/.test(name)) continue;
    const v4 = addrs?.find((a) => a.family === 'IPv4' && !a.internal);
    if (v4) return v4.address;
  }
  throw new Error('this host has no primary IPv4 address');
}

const network = (ws: any) => JSON.parse(docker('network', 'inspect', `keel-${ws.id}`).stdout)[0];
const containerIp = (ws: any) => inspect('container', ws.containerId).NetworkSettings.Networks[`keel-${ws.id}`].IPAddress as string;
const gatewayOf = (ws: any) => network(ws).IPAM.Config[0].Gateway as string;
const bridgeOf = (ws: any) => `br-${network(ws).Id.slice(0, 12)}`;
/** The workspace's code-server URL for `host` (its secret included). */
const codeUrl = (ws: any, host: string, port = ws.port) => (ws.urls.codeServer as string).replace(/@localhost:\d+$/, `@${host}:${port}`);

/** The `Authorization` value of a workspace's code-server secret (userinfo of urls.codeServer). */
const basicOf = (ws: any) => `Basic ${Buffer.from(decodeURIComponent(new URL(ws.urls.codeServer).username) + ':' + decodeURIComponent(new URL(ws.urls.codeServer).password)).toString('base64')}`;

/**
 * Sends an HTTP/1.0 GET with busybox nc from inside the workspace (through Keel's exec API, as its
 * owner): what nc printed (the answer, or why it could not connect) and its exit status.
 */
async function httpFrom(ws: any, owner: string, target: string, path = '/', auth?: string): Promise<string> {
  const [host, port] = target.split(':');
  const request = `GET ${path} HTTP/1.0\\r\\n${auth ? `Authorization: ${auth}\\r\\n` : ''}\\r\\n`;
  const res = await p.api('workspaces', `/api/workspaces/${ws.id}/exec`, {
    method: 'POST',
    as: owner,
    json: { command: `printf '${request}' | nc -w 8 ${host} ${port ?? 80} 2>&1; echo "exit=$?"`, timeout: 30_000 },
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { stdout: string; stderr: string };
  return body.stdout + body.stderr;
}

const refused = (out: string) => {
  expect(out).toContain('Connection refused');
  expect(out).toMatch(/exit=1\n$/);
};

/** Keel's iptables rules for one workspace (both chains, both families). */
function rulesOf(ws: any): string[] {
  const out: string[] = [];
  for (const bin of ['iptables', 'ip6tables']) {
    for (const chain of ['KEEL-INPUT', 'KEEL-FORWARD']) {
      const r = Bun.spawnSync([bin, '-w', '10', '-S', chain], { stdout: 'pipe' });
      out.push(...r.stdout.toString().split('\n').filter((l) => l.includes(`:${ws.id}"`)).map((l) => `${bin} ${l}`));
    }
  }
  return out;
}

beforeAll(async () => {
  // Published on every host address, so "another workspace's port through the host" is a real path.
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '26800-26899', APP_WORKSPACE_BIND_ADDRESS: '0.0.0.0' } });
  [alice1, alice2, bob] = await Promise.all([createRunning(p, 'tn-alice-one'), createRunning(p, 'tn-alice-two'), createRunning(p, 'tn-bob', { as: 'bob' })]);
  for (const [ws, owner] of [[alice1, 'alice'], [alice2, 'alice'], [bob, 'bob']] as const) {
    const r = await p.api('workspaces', `/api/workspaces/${ws.id}/exec`, { method: 'POST', as: owner, json: { command: `echo "secret of ${ws.name}" > /workspace/secret.txt` } });
    expect(r.status).toBe(200);
  }
  hostListener = Bun.serve({ hostname: '0.0.0.0', port: 0, fetch: () => new Response('the keel host itself\n') });
}, 120_000);

afterAll(async () => {
  hostListener?.stop(true);
  await closeAndClean(p);
});

describe('a network of its own', () => {
  test('each workspace sits alone on a labelled bridge, with a /28 from the pool, and Keel rules on it', () => {
    const subnets = new Set<string>();
    for (const ws of [alice1, alice2, bob]) {
      const n = network(ws);
      expect(n.Driver).toBe('bridge');
      expect(n.Labels).toMatchObject({ 'dev.keel.managed': 'true', 'dev.keel.workspace': ws.id, 'dev.keel.instance': expect.any(String) });
      expect(n.IPAM.Config[0].Subnet).toMatch(/^10\.213\.\d+\.\d+\/28$/);
      subnets.add(n.IPAM.Config[0].Subnet);
      const attached = Object.keys(inspect('container', ws.containerId).NetworkSettings.Networks);
      expect(attached).toEqual([`keel-${ws.id}`]);
      expect(rulesOf(ws).length).toBeGreaterThanOrEqual(6);
    }
    expect(subnets.size).toBe(3);
  });

  test('the owner reaches their own code server from inside, with its secret (control for the probes)', async () => {
    const out = await httpFrom(alice1, 'alice', '127.0.0.1:8080', '/secret.txt', basicOf(alice1));
    expect(out).toContain('200 OK');
    expect(out).toContain('secret of tn-alice-one');
  });
});

describe('no workspace reaches another', () => {
  test("bob's workspace cannot reach alice's by container IP; the Keel host can", async () => {
    const ip = containerIp(alice1);
    const fromHost = await fetch(`${codeUrl(alice1, ip, 8080)}/secret.txt`);
    expect(await fromHost.text()).toContain('secret of tn-alice-one');
    // Even holding alice's secret (it leaked, say), the network does not let bob's workspace through.
    const out = await httpFrom(bob, 'bob', `${ip}:8080`, '/secret.txt', basicOf(alice1));
    refused(out);
    expect(out).not.toContain('secret of');
  });

  test('two workspaces of the same owner cannot reach each other either', async () => {
    refused(await httpFrom(alice2, 'alice', `${containerIp(alice1)}:8080`, '/secret.txt', basicOf(alice1)));
    refused(await httpFrom(alice1, 'alice', `${containerIp(alice2)}:8080`, '/secret.txt', basicOf(alice2)));
  });

  test("alice's published port is refused to bob through the host's addresses; the host itself reaches it", async () => {
    const primary = primaryIp();
    const fromHost = await fetch(`${codeUrl(alice1, primary)}/secret.txt`);
    expect(await fromHost.text()).toContain('secret of tn-alice-one');
    for (const host of [primary, gatewayOf(bob)]) {
      const out = await httpFrom(bob, 'bob', `${host}:${alice1.port}`, '/secret.txt', basicOf(alice1));
      refused(out);
      expect(out).not.toContain('secret of');
    }
  });
});

describe('no workspace reaches the Keel host', () => {
  test('a listener on 0.0.0.0 answers the host on every address, and refuses the workspace on each', async () => {
    const port = hostListener.port;
    // Docker 28 may leave the default bridge's Gateway out of its IPAM config: docker0 then holds the
    // subnet's first address, as Docker assigns it.
    const ipam = JSON.parse(docker('network', 'inspect', 'bridge').stdout)[0].IPAM.Config[0] as { Subnet: string; Gateway?: string };
    const docker0 = ipam.Gateway ?? ipam.Subnet.replace(/\.0\/\d+$/, '.1');
    const addresses = [gatewayOf(bob), primaryIp(), docker0, gatewayOf(alice1)];
    for (const a of addresses) expect(await (await fetch(`http://${a}:${port}/`)).text()).toBe('the keel host itself\n');
    for (const a of addresses) {
      const out = await httpFrom(bob, 'bob', `${a}:${port}`);
      refused(out);
      expect(out).not.toContain('keel host itself');
    }
  });

  test("Keel's own API port is refused too", async () => {
    const apiPort = new URL(p.url('workspaces')).port;
    refused(await httpFrom(bob, 'bob', `${gatewayOf(bob)}:${apiPort}`, '/health'));
  });
});

describe('metadata and link-local addresses', () => {
  test('a Keel rule rejects them on the workspace bridge', () => {
    const rules = rulesOf(bob).join('\n');
    const bridge = bridgeOf(bob);
    expect(rules).toContain(`-A KEEL-FORWARD -d 169.254.0.0/16 -i ${bridge} -m comment --comment`);
    expect(rules).toContain(`-A KEEL-FORWARD -d 100.100.100.200/32 -i ${bridge} -m comment --comment`);
    expect(rules).toContain(`-A KEEL-FORWARD -d 192.0.0.192/32 -i ${bridge} -m comment --comment`);
    expect(rules).toContain(`-A KEEL-INPUT -i ${bridge} -m comment --comment`);
  });

  test('a connection to 169.254.169.254, 100.100.100.200 and 192.0.0.192 is refused at once, not left to time out', async () => {
    for (const ip of ['169.254.169.254', '100.100.100.200', '192.0.0.192']) {
      refused(await httpFrom(bob, 'bob', `${ip}:80`, '/latest/meta-data/'));
    }
  });
});

describe('delete', () => {
  test('removes the rules and the network with the workspace, and leaves the others alone', async () => {
    const bridge = bridgeOf(alice2);
    expect(rulesOf(alice2).length).toBeGreaterThan(0);
    const res = await p.api('workspaces', `/api/workspaces/${alice2.id}?volumes=true`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(rulesOf(alice2)).toEqual([]);
    expect(docker('network', 'inspect', `keel-${alice2.id}`).code).not.toBe(0);
    expect(Bun.spawnSync(['ip', 'link', 'show', bridge]).exitCode).not.toBe(0);
    expect(rulesOf(alice1).length).toBeGreaterThanOrEqual(6);
    expect(rulesOf(bob).length).toBeGreaterThanOrEqual(6);
  });
});
