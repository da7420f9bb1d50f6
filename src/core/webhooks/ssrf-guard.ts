import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The SSRF guard of webhook targets (docs/webhooks.md): a receiver is somewhere on the
 * public Internet, never this machine or its private networks. The host is resolved, every
 * address it resolves to is checked, and the request then connects to the checked address (the
 * caller pins it with a `lookup`), so a second resolution cannot swap in another (DNS rebinding).
 */

/** IPv4 ranges that are not public unicast: [network, prefix length, what it is]. */
const IPV4_REFUSED: [string, number][] = [
  ['0.0.0.0', 8], // unspecified, "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

const IPV6_REFUSED: [string, number][] = [
  ['::', 96], // unspecified, loopback (::1) and the deprecated IPv4-compatible form
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
];

const refused = new BlockList();
for (const [network, prefix] of IPV4_REFUSED) {
  refused.addSubnet(network, prefix, 'ipv4');
  // The same addresses reached through IPv6: IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d).
  refused.addSubnet(`::ffff:${network}`, 96 + prefix, 'ipv6');
  refused.addSubnet(`64:ff9b::${network}`, 96 + prefix, 'ipv6');
}
for (const [network, prefix] of IPV6_REFUSED) refused.addSubnet(network, prefix, 'ipv6');

export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return refused.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export interface CheckedTarget {
  url: URL;
  /** The address to connect to, one of those the host resolved to, all of them checked. */
  address: string;
  family: 4 | 6;
}

export type TargetCheck = { ok: true; target: CheckedTarget } | { ok: false; problem: string };

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Whether `raw` is an http(s) URL whose host resolves to public addresses only (or any, with `allowPrivate`). */
export async function checkTarget(raw: string, options: { allowPrivate: boolean; resolve?: Resolver }): Promise<TargetCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, problem: 'must be an absolute http or https URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, problem: 'must be an http or https URL' };
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await (options.resolve ?? systemResolver)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) return { ok: false, problem: `host ${host} could not be resolved` };
  }
  if (!options.allowPrivate && addresses.some((a) => isRefusedAddress(a.address))) {
    return { ok: false, problem: 'must not target a loopback, private, link-local or unspecified address' };
  }
  const first = addresses[0]!;
  return { ok: true, target: { url, address: first.address, family: first.family === 6 ? 6 : 4 } };
}
