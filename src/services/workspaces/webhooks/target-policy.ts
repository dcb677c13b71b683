// Where a webhook may be sent, checked at registration: http(s) only, and an IP literal judged by
// the platform's address policy (platform/net/address-policy.ts, shared with repo clones). Names
// are judged at delivery, once resolved (deliver.ts).
//
// The URL is read by the WHATWG URL parser, which turns every IPv4 spelling (0x7f.1, 2130706433,
// 0251.0376.0251.0376, a trailing dot) into dotted decimal: the same host fetch and node:http
// connect to, and the one the policy judges.
import { literalRefusal, REFUSAL_TEXT, type TargetPolicy } from '../../../platform/net/address-policy';
import { hostOf, portOf } from '../../../platform/net/pinned-fetch';

export const MAX_URL_LENGTH = 2048;

/** Why a target URL is refused at registration, or null. Never repeats the URL. */
export function urlRefusal(raw: string, policy: TargetPolicy): string | null {
  if (raw.length > MAX_URL_LENGTH) return `url must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url must use http:// or https://';
  if (!url.hostname) return 'url must name a host';
  const refusal = literalRefusal(hostOf(url), policy, portOf(url));
  return refusal ? `url refused: the address is ${REFUSAL_TEXT[refusal]}` : null;
}
