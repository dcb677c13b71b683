// Keel's own iptables rules: what Docker's networking does not cover for a workspace's bridge.
// Docker (iptables on) already keeps user-defined bridges from reaching each other. It does not stop
// a container from reaching the engine host itself (the bridge gateway, the host's other addresses:
// INPUT), nor link-local and cloud-metadata addresses, nor other containers' ports published on the
// host (FORWARD after DNAT). Those get rules here, in two chains Keel owns in the filter table:
//
//   INPUT       -> KEEL-INPUT     per bridge: replies to the host's own connections pass; the rest is REJECTed
//   DOCKER-USER -> KEEL-FORWARD   per bridge: metadata, link-local, the workspace subnet pool, DNATed traffic
//
// (IPv6: the same chains in ip6tables, jumped from INPUT and FORWARD, when ip6tables works.)
// Several Keel instances share one host: every rule carries the comment `keel:<instance>:<workspace>`,
// a workspace's rules are added together in one `iptables-restore --noflush` (one process instead of
// a `-C` and an `-A` per rule: the cold create's critical path), and removed one by one by that comment. The chains and the jumps
// into them are shared and never flushed or removed. REJECT (not DROP), so a refused connection fails
// at once with "connection refused" instead of hanging.
import { existsSync } from 'node:fs';
import { neverReached } from '../../../platform/net/address-policy';
import type { Logger } from '../../../platform/runtime';

export type FirewallMode = 'required' | 'off';

export const INPUT_CHAIN = 'KEEL-INPUT';
export const FORWARD_CHAIN = 'KEEL-FORWARD';

/** Cloud metadata and link-local destinations no workspace may reach: the same list clones and webhooks are refused by. */
const BLOCKED_V4 = neverReached(4);
const BLOCKED_V6 = neverReached(6);

export interface WorkspaceNet {
  workspaceId: string;
  bridge: string;
  subnet: string;
}

export interface FirewallStatus {
  /** Keel's rules are applied to every workspace network. */
  active: boolean;
  /** Why not, in one line (empty when active). */
  reason: string;
  ipv6: boolean;
}

type Family = 'iptables' | 'ip6tables';

/**
 * Runs iptables (or iptables-restore, fed `input`) on Keel's host, or inside the network namespace
 * `netns` (a path: an engine started there, docs/operations.md).
 */
async function runIn(bin: Family | 'iptables-restore' | 'ip6tables-restore', args: string[], netns?: string, input?: string): Promise<{ ok: boolean; out: string; err: string }> {
  try {
    const p = Bun.spawn([...(netns ? ['nsenter', `--net=${netns}`] : []), bin, '-w', '10', ...args], { stdout: 'pipe', stderr: 'pipe', stdin: input === undefined ? 'ignore' : new Blob([input]) });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { ok: code === 0, out, err: err.trim().split('\n')[0] ?? '' };
  } catch (e) {
    return { ok: false, out: '', err: `${bin} could not be run (${(e as Error).message})` };
  }
}

const tagOf = (instance: string, workspaceId: string) => `keel:${instance}:${workspaceId}`;

/** `-A CHAIN ... --comment "x" ...` as argv (quotes removed), for `-D`. */
function splitRule(line: string): string[] {
  return (line.match(/"[^"]*"|\S+/g) ?? []).map((w) => w.replace(/^"(.*)"$/, '$1'));
}

/** This instance's rules in one chain, as `-D` argv, with the workspace each belongs to. */
async function taggedRules(bin: Family, chain: string, instance: string, netns?: string): Promise<{ workspaceId: string; del: string[] }[]> {
  const listed = await runIn(bin, ['-S', chain], netns);
  if (!listed.ok) return [];
  const prefix = `keel:${instance}:`;
  const out: { workspaceId: string; del: string[] }[] = [];
  for (const line of listed.out.split('\n')) {
    if (!line.startsWith(`-A ${chain} `)) continue;
    const argv = splitRule(line);
    const tag = argv[argv.indexOf('--comment') + 1] ?? '';
    if (!tag.startsWith(prefix)) continue;
    out.push({ workspaceId: tag.slice(prefix.length), del: ['-D', ...argv.slice(1)] });
  }
  return out;
}

/** This instance's rules in both of Keel's chains, IPv4 and IPv6. */
async function allTaggedRules(instance: string, netns?: string): Promise<{ bin: Family; workspaceId: string; del: string[] }[]> {
  const out: { bin: Family; workspaceId: string; del: string[] }[] = [];
  for (const bin of ['iptables', 'ip6tables'] as const) {
    for (const chain of [INPUT_CHAIN, FORWARD_CHAIN]) for (const r of await taggedRules(bin, chain, instance, netns)) out.push({ bin, ...r });
  }
  return out;
}

/** Removes every rule of `instance` (for `workspaceId` only, when given) from Keel's chains. */
export async function removeRules(instance: string, workspaceId?: string, netns?: string): Promise<void> {
  for (const r of await allTaggedRules(instance, netns)) {
    if (workspaceId === undefined || r.workspaceId === workspaceId) await runIn(r.bin, r.del, netns);
  }
}

/** The rules of one workspace bridge, in order, per family (each gets the tag appended). */
function rulesFor(net: WorkspaceNet, pool: string): Record<Family, [string, string[]][]> {
  const i = ['-i', net.bridge];
  const established = [...i, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED'];
  return {
    iptables: [
      // Replies to connections the host opened (published ports through docker-proxy, Keel itself).
      [INPUT_CHAIN, [...established, '-j', 'RETURN']],
      [INPUT_CHAIN, [...i, '-j', 'REJECT']],
      // A connection to a port published on the host, DNATed to another container: Docker's isolation
      // drops it too; this refuses it whatever the engine's version does.
      [FORWARD_CHAIN, [...i, '-m', 'conntrack', '--ctstate', 'DNAT', '--ctdir', 'ORIGINAL', '-j', 'REJECT']],
      ...BLOCKED_V4.map((d): [string, string[]] => [FORWARD_CHAIN, [...i, '-d', d, '-j', 'REJECT']]),
      // Every other workspace network, of any Keel sharing the pool, even where Docker's isolation is weaker.
      [FORWARD_CHAIN, [...i, '!', '-o', net.bridge, '-d', pool, '-j', 'REJECT']],
    ],
    ip6tables: [
      [INPUT_CHAIN, [...established, '-j', 'RETURN']],
      [INPUT_CHAIN, [...i, '-j', 'REJECT']],
      ...BLOCKED_V6.map((d): [string, string[]] => [FORWARD_CHAIN, [...i, '-d', d, '-j', 'REJECT']]),
    ],
  };
}

/** A remote DOCKER_HOST: its bridges live on another machine, out of this host's iptables. */
function remoteEngine(dockerHost: string | undefined): string | null {
  const m = /^(?:tcp|http|https):\/\/\[?([^\]/]+?)\]?(?::\d+)?\/?$/.exec(dockerHost ?? '');
  if (!m) return null;
  return ['127.0.0.1', 'localhost', '::1'].includes(m[1]!) ? null : m[1]!;
}

export function createFirewall(opts: { instance: string; mode: FirewallMode; dockerHost: string | undefined; pool: string; log: Logger; netns?: string }) {
  const { instance, log, netns } = opts;
  const run = (bin: Family, args: string[]) => runIn(bin, args, netns);
  let probed: Promise<FirewallStatus> | undefined;
  // One firewall change at a time in this process (the `-C` then `-A` pairs must not interleave).
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn);
    chain = next.catch(() => undefined);
    return next;
  };

  /** Creates Keel's chains (once per host; shared) and the jumps into them, each only when absent. */
  async function ensureChains(bin: Family): Promise<string | null> {
    const hook = bin === 'iptables' || (await run(bin, ['-S', 'DOCKER-USER'])).ok ? 'DOCKER-USER' : 'FORWARD';
    for (const [from, to] of [['INPUT', INPUT_CHAIN], [hook, FORWARD_CHAIN]] as const) {
      if (!(await run(bin, ['-S', to])).ok) {
        const made = await run(bin, ['-N', to]);
        if (!made.ok && !/exists/i.test(made.err)) return made.err;
      }
      if (!(await run(bin, ['-C', from, '-j', to])).ok) {
        const jumped = await run(bin, ['-I', from, '1', '-j', to]);
        if (!jumped.ok) return jumped.err;
      }
    }
    return null;
  }

  async function probe(): Promise<FirewallStatus> {
    const off = (reason: string): FirewallStatus => ({ active: false, reason, ipv6: false });
    if (opts.mode === 'off') return off('APP_WORKSPACE_FIREWALL=off');
    const remote = remoteEngine(opts.dockerHost);
    if (remote && !netns) return off(`the engine (DOCKER_HOST) runs on ${remote}, whose iptables Keel cannot reach`);
    const docker = await run('iptables', ['-S', 'DOCKER-USER']);
    if (!docker.ok) {
      if (/could not be run/.test(docker.err)) return off('iptables is not installed or not on PATH');
      return off(/denied|root|permission/i.test(docker.err)
        ? `Keel may not change iptables here (${docker.err}); run it as root or with CAP_NET_ADMIN`
        : `no DOCKER-USER chain on this host (${docker.err}): the engine does not manage iptables here`);
    }
    const failed = await ensureChains('iptables');
    if (failed) return off(`Keel's iptables chains could not be set up (${failed})`);
    const ipv6 = (await run('ip6tables', ['-S', 'INPUT'])).ok && !(await ensureChains('ip6tables'));
    return { active: true, reason: '', ipv6 };
  }

  /** The probe's answer; an inactive one is asked again next time (dockerd may have come up, or made DOCKER-USER, since). */
  const status = async (): Promise<FirewallStatus> => {
    const s = await (probed ??= probe());
    if (!s.active && opts.mode !== 'off') probed = undefined;
    return s;
  };

  return {
    status,

    /**
     * Applies the workspace's rules (each only when absent: safe to call again). Throws when the
     * firewall is required and cannot be applied, so no container starts unprotected.
     */
    protect(net: WorkspaceNet): Promise<void> {
      return serial(async () => {
        const s = await status();
        if (opts.mode === 'off') return;
        if (!s.active) throw new Error(`workspace network isolation is unavailable: ${s.reason}`);
        // (In another namespace, /sys shows Keel's own; iptables there is told the bridge by name alone.)
        if (!netns && !existsSync(`/sys/class/net/${net.bridge}`)) {
          throw new Error(`the workspace bridge ${net.bridge} is not on Keel's host: the engine runs in another network namespace or machine, so Keel cannot firewall it`);
        }
        const rules = rulesFor(net, opts.pool);
        const tag = tagOf(instance, net.workspaceId);
        for (const bin of s.ipv6 ? (['iptables', 'ip6tables'] as const) : (['iptables'] as const)) {
          await ensureChains(bin);
          // All of them there already (a reconciliation after a restart): nothing to do. Some only (a
          // crash mid-removal, a hand edit): they go, and the whole set is added again below.
          const present = (await taggedRules(bin, INPUT_CHAIN, instance, netns)).concat(await taggedRules(bin, FORWARD_CHAIN, instance, netns)).filter((r) => r.workspaceId === net.workspaceId);
          if (present.length === rules[bin].length) continue;
          for (const r of present) await run(bin, r.del);
          // One transaction: the table's other rules are kept (--noflush), Keel's chains are not declared
          // (a declared chain would be flushed), and either every rule is added or none.
          const lines = rules[bin].map(([chainName, spec]) => ['-A', chainName, ...spec.slice(0, -2), '-m', 'comment', '--comment', tag, ...spec.slice(-2)].join(' '));
          const restored = await runIn(`${bin}-restore`, ['--noflush'], netns, `*filter\n${lines.join('\n')}\nCOMMIT\n`);
          if (!restored.ok) throw new Error(`${bin}-restore refused the workspace rules: ${restored.err}`);
        }
      });
    },

    /** Removes the workspace's rules (none is fine). */
    release(workspaceId: string): Promise<void> {
      return serial(() => removeRules(instance, workspaceId, netns)).catch((e) => log.warn('workspace firewall rules not removed', { workspace: workspaceId, error: String(e) }));
    },

    /** Workspaces that have rules of this instance in Keel's chains. */
    tagged(): Promise<Set<string>> {
      return serial(async () => new Set((await allTaggedRules(instance, netns)).map((r) => r.workspaceId)));
    },
  };
}

export type Firewall = ReturnType<typeof createFirewall>;
