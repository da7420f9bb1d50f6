import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The SSRF guard of webhook targets (docs/webhooks.md): a receiver is somewhere on the
 * public Internet, never this machine or its private networks. The host is resolved, every
 * address it resolves to is checked, and the request then connects to the checked address (the
 * caller pins it with a `lookup`), so a second resolution cannot swap in another (DNS rebinding).
 */

/**
 * IPv4 ranges that are not global unicast (the IANA special-purpose registry): [network, prefix length].
 * Everything else of IPv4 is allowed, the documentation ranges (TEST-NET-1 to 3) too: routed
 * nowhere, they reach nothing, and examples and tests use them as stand-ins for public receivers.
 */
const IPV4_REFUSED: [string, number][] = [
  ['0.0.0.0', 8], // unspecified, "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated): relays into IPv6 whatever they are given
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

const refusedV4 = new BlockList();
for (const [network, prefix] of IPV4_REFUSED) refusedV4.addSubnet(network, prefix, 'ipv4');

/**
 * IPv6 is allowed only in global unicast, 2000::/3, outside its special-purpose blocks below.
 * Outside 2000::/3 lie the loopback, unspecified, IPv4-compatible, discard-only (100::/64),
 * local-use NAT64 (64:ff9b:1::/48), unique local, link-local and multicast ranges: all refused,
 * except the forms that embed an IPv4 address, which are decoded and judged as that address.
 */
const globalV6 = new BlockList();
globalV6.addSubnet('2000::', 3, 'ipv6');
const refusedV6 = new BlockList();
refusedV6.addSubnet('2001::', 23, 'ipv6'); // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID
refusedV6.addSubnet('2001:db8::', 32, 'ipv6'); // documentation
refusedV6.addSubnet('3fff::', 20, 'ipv6'); // documentation

/**
 * The eight 16-bit words of an IPv6 address, null when it is not one. The WHATWG URL parser
 * validates it and writes it canonically (hexadecimal words, one `::`, no dotted quad), which
 * leaves only the `::` to expand; a zone (`%eth0`) does not parse and is refused with the rest.
 */
function ipv6Words(address: string): number[] | null {
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const [left = '', right] = canonical.split('::');
  const words = (part: string): number[] => (part === '' ? [] : part.split(':').map((w) => parseInt(w, 16)));
  const head = words(left);
  if (right === undefined) return head.length === 8 ? head : null;
  const tail = words(right);
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

const dottedQuad = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
const zeros = (words: number[], from: number, to: number): boolean => words.slice(from, to).every((w) => w === 0);

/** The IPv4 address an IPv6 address carries and is routed to, or null when it carries none. */
export function embeddedIpv4(words: readonly number[]): string | null {
  const w = [...words];
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d (SIIT).
  if (zeros(w, 0, 5) && w[5] === 0xffff) return dottedQuad(w[6]!, w[7]!);
  if (zeros(w, 0, 4) && w[4] === 0xffff && w[5] === 0) return dottedQuad(w[6]!, w[7]!);
  // NAT64 with the well-known prefix 64:ff9b::/96: the translator connects to a.b.c.d.
  if (w[0] === 0x64 && w[1] === 0xff9b && zeros(w, 2, 6)) return dottedQuad(w[6]!, w[7]!);
  // 6to4 2002:AABB:CCDD::/48: relayed to the IPv4 address AA.BB.CC.DD.
  if (w[0] === 0x2002) return dottedQuad(w[1]!, w[2]!);
  return null;
}

export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return refusedV4.check(address, 'ipv4');
  if (family !== 6) return true;
  const words = ipv6Words(address);
  if (words === null) return true;
  const v4 = embeddedIpv4(words);
  if (v4 !== null) return refusedV4.check(v4, 'ipv4');
  return !globalV6.check(address, 'ipv6') || refusedV6.check(address, 'ipv6');
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
