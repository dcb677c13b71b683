// IPv4 subnets for workspace networks, carved from one pool (APP_WORKSPACE_SUBNET_POOL) in blocks of
// SUBNET_PREFIX. Keel picks each network's subnet itself instead of leaving it to the engine, whose
// default pools hold about 30 networks; a /16 pool holds 4,096 workspaces. Pure arithmetic: the
// engine answers which subnets are taken (several Keels share one engine and one pool).

/** Each workspace network is a /28: gateway, the container, room for a sidecar later. */
export const SUBNET_PREFIX = 28;

export interface Cidr {
  base: number;
  prefix: number;
}

const toInt = (ip: string): number | null => {
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
};

export const toIp = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

const size = (prefix: number) => 2 ** (32 - prefix);

/** "10.213.0.0/16" as numbers (the base aligned to the prefix), or null when it is not an IPv4 CIDR. */
export function parseCidr(text: string): Cidr | null {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(text.trim());
  const ip = m ? toInt(m[1]!) : null;
  const prefix = Number(m?.[2]);
  if (ip === null || !(prefix >= 0 && prefix <= 32)) return null;
  return { base: ip - (ip % size(prefix)), prefix };
}

export const formatCidr = (c: Cidr) => `${toIp(c.base)}/${c.prefix}`;

export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.base < b.base + size(b.prefix) && b.base < a.base + size(a.prefix);
}

/** True when `ip` lies in `cidr`. */
export function contains(cidr: Cidr, ip: string): boolean {
  const n = toInt(ip);
  return n !== null && overlaps(cidr, { base: n, prefix: 32 });
}

/**
 * Candidate subnets for one workspace, in the order to try them: starting at a block chosen from
 * `seed` (so concurrent Keels rarely race for the same one), skipping blocks that overlap `used`.
 * At most `limit` candidates.
 */
export function subnetCandidates(pool: Cidr, used: string[], seed: string, limit = 32): { subnet: string; gateway: string }[] {
  const blocks = size(SUBNET_PREFIX) > size(pool.prefix) ? 0 : size(pool.prefix) / size(SUBNET_PREFIX);
  const taken = used.map(parseCidr).filter((c): c is Cidr => c !== null);
  let h = 0;
  for (const ch of seed) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
  const out: { subnet: string; gateway: string }[] = [];
  for (let i = 0; i < blocks && out.length < limit; i++) {
    const block: Cidr = { base: pool.base + ((h + i) % blocks) * size(SUBNET_PREFIX), prefix: SUBNET_PREFIX };
    if (taken.some((t) => overlaps(t, block))) continue;
    out.push({ subnet: formatCidr(block), gateway: toIp(block.base + 1) });
  }
  return out;
}
