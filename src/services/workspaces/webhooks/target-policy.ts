// Where a webhook may be sent: pure checks of a URL at registration and of each resolved address at
// delivery. Link-local and cloud-metadata addresses are always refused; loopback and private ranges
// only with APP_WEBHOOK_DENY_PRIVATE=true (self-hosted receivers live there).
//
// Hosts are read by the WHATWG URL parser, which turns every IPv4 spelling (0x7f.1, 2130706433,
// 0251.0376.0251.0376, a trailing dot) into dotted decimal, the same form fetch and node:http
// connect to; ipaddr.js then classifies the address. IPv6 forms that carry an IPv4 address
// (mapped, compatible, NAT64, 6to4, SIIT) are judged by that IPv4 address.
import ipaddr from 'ipaddr.js';

export type AddressClass = 'public' | 'private' | 'loopback' | 'link-local' | 'metadata' | 'not-routable';

/** Cloud metadata endpoints outside the link-local ranges (Alibaba, AWS over IPv6, Azure's wire server, Oracle). */
const METADATA = ['100.100.100.200', 'fd00:ec2::254', '168.63.129.16', '192.0.0.192'].map((a) => ipaddr.parse(a).toString());

const V4_CLASS: Record<string, AddressClass> = {
  unicast: 'public',
  private: 'private',
  carrierGradeNat: 'private',
  loopback: 'loopback',
  linkLocal: 'link-local',
  unspecified: 'not-routable',
  broadcast: 'not-routable',
  multicast: 'not-routable',
  reserved: 'not-routable',
};

const V6_CLASS: Record<string, AddressClass> = {
  unicast: 'public',
  uniqueLocal: 'private',
  loopback: 'loopback',
  linkLocal: 'link-local',
  unspecified: 'not-routable',
  multicast: 'not-routable',
  reserved: 'not-routable',
  discard: 'not-routable',
  teredo: 'not-routable',
};

/** The IPv4 address an IPv6 address carries, for the forms that route to it. */
function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const b = a.toByteArray();
  const range = a.range();
  const tail = (from: number) => new ipaddr.IPv4(b.slice(from, from + 4));
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052') return tail(12);
  if (range === '6to4') return tail(2);
  // ::a.b.c.d (IPv4-compatible, deprecated): the first 96 bits are zero.
  if (b.slice(0, 12).every((x) => x === 0) && !(b[12] === 0 && b[13] === 0 && b[14] === 0 && b[15]! <= 1)) return tail(12);
  return null;
}

/** The class of an IP address in any form ipaddr.js reads; `not-routable` for anything unparseable. */
export function classifyAddress(address: string): AddressClass {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return 'not-routable';
  }
  if (METADATA.includes(a.toString())) return 'metadata';
  if (a.kind() === 'ipv6') {
    const v4 = embeddedIPv4(a as ipaddr.IPv6);
    if (v4) return classifyAddress(v4.toString());
    return V6_CLASS[a.range()] ?? 'not-routable';
  }
  return V4_CLASS[a.range()] ?? 'not-routable';
}

/** Why an address may not be a webhook target under this policy, or null when it may. */
export function addressRefusal(address: string, denyPrivate: boolean): string | null {
  const cls = classifyAddress(address);
  switch (cls) {
    case 'public':
      return null;
    case 'private':
    case 'loopback':
      return denyPrivate ? `${cls} addresses are refused (APP_WEBHOOK_DENY_PRIVATE=true)` : null;
    case 'link-local':
      return 'link-local addresses are refused';
    case 'metadata':
      return 'cloud metadata addresses are refused';
    default:
      return 'the address is not a routable destination';
  }
}

export const MAX_URL_LENGTH = 2048;

/** Checks a target URL at registration; the reason it is refused, or null. IP literals are judged here, names at delivery. */
export function urlRefusal(raw: string, denyPrivate: boolean): string | null {
  if (raw.length > MAX_URL_LENGTH) return `url must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url must use http:// or https://';
  if (!url.hostname) return 'url must name a host';
  const host = hostOf(url);
  if (ipaddr.isValid(host)) {
    const refusal = addressRefusal(host, denyPrivate);
    return refusal ? `url refused: ${refusal}` : null;
  }
  return null;
}

/** The URL's host as an address or name to resolve: brackets off an IPv6 literal, a trailing dot off a name. */
export function hostOf(url: URL): string {
  const h = url.hostname;
  if (h.startsWith('[')) return h.slice(1, -1);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}
