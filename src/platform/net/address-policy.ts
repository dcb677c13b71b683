// Which network addresses Keel may connect to on a user's behalf (repo clones, webhook deliveries):
// link-local and cloud-metadata addresses never; loopback and private ones unless the operator denies
// them. Every spelling of an address is classified as the resolver would read it (decimal, hex, octal,
// short forms, IPv4 inside IPv6), by ipaddr.js rather than hand-written patterns.
import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

export interface TargetPolicy {
  /** Refuse loopback, private, unique-local and carrier-grade NAT addresses too. */
  denyPrivate: boolean;
  /**
   * Further destinations the calling service keeps out of reach whatever `denyPrivate` says (the
   * platform knows nothing of them: the caller builds this, e.g. from its own configuration).
   */
  deny?: DeniedAddresses;
}

/** Ranges and single addresses refused as `denied`; `addresses` is asked at each check, so it may change. */
export interface DeniedAddresses {
  /** CIDR ranges, IPv4 or IPv6. */
  cidrs: readonly string[];
  /** Single addresses known now (read at every check; keep it cheap and synchronous). */
  addresses?: () => Iterable<string>;
  /**
   * Ports refused on this host's own addresses (loopback, unspecified, every interface's address):
   * the caller's own listeners. Read at every check.
   */
  hostPorts?: () => Iterable<number>;
}

/** Why an address is refused; `null` when it may be reached. */
export type AddressRefusal = 'metadata' | 'link-local' | 'denied' | 'private' | 'not-unicast';

/**
 * The one list of destinations nothing Keel runs or connects to for a user may reach: the link-local
 * ranges (169.254.169.254, the usual cloud metadata address, is inside the IPv4 one and refused as
 * metadata) and the cloud metadata endpoints outside them: Alibaba Cloud, Oracle Cloud's legacy
 * address, AWS's IPv6 IMDS. refusalOf refuses them; the workspace firewall rejects them (neverReached).
 */
const NEVER_REACHED: readonly { cidr: string; refusal: 'metadata' | 'link-local' }[] = [
  { cidr: '169.254.0.0/16', refusal: 'link-local' },
  { cidr: '100.100.100.200/32', refusal: 'metadata' },
  { cidr: '192.0.0.192/32', refusal: 'metadata' },
  { cidr: 'fe80::/10', refusal: 'link-local' },
  { cidr: 'fd00:ec2::254/128', refusal: 'metadata' },
];
const NEVER_REACHED_PARSED = NEVER_REACHED.map((r) => ({ range: ipaddr.parseCIDR(r.cidr), refusal: r.refusal }));

/** The never-reached destinations of one address family, as CIDR (for firewall rules). */
export const neverReached = (family: 4 | 6): string[] => NEVER_REACHED.filter((r) => r.cidr.includes(':') === (family === 6)).map((r) => r.cidr);

/** Ranges that reach this host or a private network: allowed unless the policy denies private targets. */
const PRIVATE_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat', 'unspecified']);
/** Ranges no connection should go to: broadcast, multicast, reserved, documentation... */
const NOT_UNICAST = new Set(['broadcast', 'multicast', 'reserved', 'benchmarking', 'amt', 'as112', 'as112v6', 'orchid2', 'discard', 'teredo']);

/** The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16), if any. */
function embeddedIpv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (a.isIPv4MappedAddress()) return a.toIPv4Address();
  const p = a.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const range = a.range();
  if (range === 'rfc6052' || range === 'rfc6145') return v4(p[6]!, p[7]!);
  if (range === '6to4') return v4(p[1]!, p[2]!);
  // The deprecated IPv4-compatible form ::a.b.c.d (not :: or ::1).
  if (p.slice(0, 6).every((x) => x === 0) && (p[6]! !== 0 || p[7]! > 1)) return v4(p[6]!, p[7]!);
  return null;
}

/**
 * The address a host string names when it is an IP literal in any spelling the system resolver
 * accepts (`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`, `[::ffff:a9fe:a9fe]`), else null.
 */
export function parseIpLiteral(host: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  // A zone id (fe80::1%eth0) names an interface: the address part decides.
  const bare = h.includes('%') ? h.slice(0, h.indexOf('%')) : h;
  if (!ipaddr.isValid(bare)) return null;
  try {
    return ipaddr.parse(bare);
  } catch {
    return null;
  }
}

/** Whether `address` is one the policy's `deny` names (a range, or one of the addresses known now). */
function isDenied(address: ipaddr.IPv4 | ipaddr.IPv6, deny: DeniedAddresses | undefined): boolean {
  if (!deny) return false;
  for (const cidr of deny.cidrs) {
    const range = parseCidrCached(cidr);
    if (range && range[0].kind() === address.kind() && address.match(range)) return true;
  }
  if (deny.addresses) {
    const text = address.toString();
    for (const a of deny.addresses()) {
      const ip = parseIpLiteral(a);
      if (ip && ip.kind() === address.kind() && ip.toString() === text) return true;
    }
  }
  return false;
}

const parsedCidrs = new Map<string, [ipaddr.IPv4 | ipaddr.IPv6, number] | null>();
function parseCidrCached(cidr: string) {
  let r = parsedCidrs.get(cidr);
  if (r === undefined) {
    try {
      r = ipaddr.parseCIDR(cidr);
    } catch {
      r = null;
    }
    parsedCidrs.set(cidr, r);
  }
  return r;
}

/** Whether `address` reaches this host: loopback, unspecified, or one of its interfaces' addresses. */
function isThisHost(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const range = address.range();
  if (range === 'loopback' || range === 'unspecified') return true;
  const text = address.toString();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      const ip = parseIpLiteral(a.address);
      if (ip && ip.kind() === address.kind() && ip.toString() === text) return true;
    }
  }
  return false;
}

function isDeniedHostPort(address: ipaddr.IPv4 | ipaddr.IPv6, port: number | undefined, deny: DeniedAddresses | undefined): boolean {
  if (port === undefined || !deny?.hostPorts) return false;
  for (const p of deny.hostPorts()) if (p === port) return isThisHost(address);
  return false;
}

/**
 * Why `address` (already parsed) is refused under `policy`, or null when it may be reached. `port`,
 * when known, is checked against the policy's host ports.
 */
export function refusalOf(address: ipaddr.IPv4 | ipaddr.IPv6, policy: TargetPolicy, port?: number): AddressRefusal | null {
  if (address.kind() === 'ipv6') {
    const inner = embeddedIpv4(address as ipaddr.IPv6);
    if (inner) return refusalOf(inner, policy, port);
  }
  const never = NEVER_REACHED_PARSED.find((r) => r.range[0].kind() === address.kind() && address.match(r.range));
  if (never) return address.toString() === '169.254.169.254' ? 'metadata' : never.refusal;
  if (isDenied(address, policy.deny) || isDeniedHostPort(address, port, policy.deny)) return 'denied';
  const range = address.range();
  if (NOT_UNICAST.has(range)) return 'not-unicast';
  if (PRIVATE_RANGES.has(range)) return policy.denyPrivate ? 'private' : null;
  return null;
}

/** The refusal for a host string that is an IP literal; null for a name (checked once resolved) or an allowed literal. */
export function literalRefusal(host: string, policy: TargetPolicy, port?: number): AddressRefusal | null {
  const ip = parseIpLiteral(host);
  return ip ? refusalOf(ip, policy, port) : null;
}

export const REFUSAL_TEXT: Record<AddressRefusal, string> = {
  metadata: 'a cloud metadata address',
  'link-local': 'a link-local address',
  denied: 'an address Keel keeps out of reach (another tenant\'s network, or Keel\'s own port)',
  private: 'a loopback or private address, refused by the operator',
  'not-unicast': 'not a unicast address',
};

export class TargetRefused extends Error {
  constructor(
    readonly refusal: AddressRefusal | 'unresolved',
    message: string,
  ) {
    super(message);
  }
}

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;
const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/**
 * Every address `host` resolves to, each checked: one refused address refuses the whole name (the
 * connection could pick any of them). Connect to the returned addresses, not to the name again, or
 * a name that changes its answer between the check and the connection (DNS rebinding) slips through.
 */
export async function resolveAllowed(host: string, policy: TargetPolicy, resolve: Resolver = systemResolver, port?: number): Promise<string[]> {
  const literal = parseIpLiteral(host);
  if (literal) {
    const r = refusalOf(literal, policy, port);
    if (r) throw new TargetRefused(r, `the address is ${REFUSAL_TEXT[r]}`);
    return [literal.toString()];
  }
  let found: { address: string }[];
  try {
    found = await resolve(host);
  } catch {
    throw new TargetRefused('unresolved', 'the host name does not resolve');
  }
  if (found.length === 0) throw new TargetRefused('unresolved', 'the host name does not resolve');
  const out: string[] = [];
  for (const { address } of found) {
    const ip = parseIpLiteral(address);
    const r = ip ? refusalOf(ip, policy, port) : 'not-unicast';
    if (r) throw new TargetRefused(r, `the host name resolves to ${REFUSAL_TEXT[r]}`);
    out.push(ip!.toString());
  }
  return [...new Set(out)];
}
