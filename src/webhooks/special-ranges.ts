import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The address ranges a webhook may never reach: every entry of IANA's IPv4 and IPv6 Special-Purpose
 * Address Registries (iana-ipv4-special-registry, iana-ipv6-special-registry, as of 2025), multicast,
 * and for IPv6 everything outside 2000::/3, the only block IANA allocates as global unicast.
 *
 * Three IPv6 forms reach an IPv4 host and are judged by the IPv4 address they carry: IPv4-mapped
 * (::ffff:a.b.c.d, what a dual-stack socket connects to), NAT64's well-known prefix 64:ff9b::/96
 * (what DNS64 answers on an IPv6-only network, for every IPv4-only receiver) and 6to4 (2002:AABB:CCDD::).
 * The deprecated IPv4-compatible form (::a.b.c.d) and the local-use NAT64 prefix are refused whatever
 * they carry.
 */

const IPV4: [cidr: string, name: string][] = [
  ['0.0.0.0/8', '"this network"'],
  ['10.0.0.0/8', 'private use'],
  ['100.64.0.0/10', 'shared address space (carrier-grade NAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private use'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)'],
  ['192.31.196.0/24', 'AS112'],
  ['192.52.193.0/24', 'AMT'],
  ['192.88.99.0/24', 'deprecated 6to4 relay anycast'],
  ['192.168.0.0/16', 'private use'],
  ['192.175.48.0/24', 'AS112 direct delegation'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation (TEST-NET-2)'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'limited broadcast'],
];

const IPV6: [cidr: string, name: string][] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'local-use IPv4/IPv6 translation'],
  ['100::/64', 'discard-only'],
  ['100:0:0:1::/64', 'dummy prefix'],
  ['2001::/23', 'IETF protocol assignments (Teredo, benchmarking, ORCHID, …)'],
  ['2001:db8::/32', 'documentation'],
  ['2620:4f:8000::/48', 'AS112 direct delegation'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'segment routing SIDs'],
  ['fc00::/7', 'unique local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'deprecated site-local'],
  ['ff00::/8', 'multicast'],
];

/** IPv6 prefixes that carry an IPv4 address at a byte offset; `judged` ones are decided by it. */
const EMBEDDING: { cidr: string; name: string; offset: number; judged: boolean }[] = [
  { cidr: '::ffff:0:0/96', name: 'IPv4-mapped', offset: 12, judged: true },
  { cidr: '64:ff9b::/96', name: 'NAT64', offset: 12, judged: true },
  { cidr: '2002::/16', name: '6to4', offset: 2, judged: true },
  { cidr: '::/96', name: 'deprecated IPv4-compatible', offset: 12, judged: false },
];

type Family = 'ipv4' | 'ipv6';
const listOf = (cidr: string, family: Family) => {
  const [net, bits] = cidr.split('/');
  const l = new BlockList();
  l.addSubnet(net, Number(bits), family);
  return l;
};
// One list per entry, to name the range; each list holds one family only (a BlockList matches an IPv6
// rule against IPv4-mapped forms of IPv4 addresses and the reverse).
const v4 = IPV4.map(([cidr, name]) => ({ cidr, name, list: listOf(cidr, 'ipv4') }));
const v6 = IPV6.map(([cidr, name]) => ({ cidr, name, list: listOf(cidr, 'ipv6') }));
const embedding = EMBEDDING.map((e) => ({ ...e, list: listOf(e.cidr, 'ipv6') }));
const globalUnicast = listOf('2000::/3', 'ipv6');

/**
 * Why the address may not be a webhook target ("192.0.2.0/24, documentation (TEST-NET-1)"), or null
 * for a public address. Anything that is not an IP address is refused.
 */
export function specialRangeOf(address: string): string | null {
  const family = isIP(address);
  if (family === 4) {
    const hit = v4.find((r) => r.list.check(address, 'ipv4'));
    return hit ? `${hit.cidr}, ${hit.name}` : null;
  }
  if (family !== 6) return 'not an IP address';
  // The canonical text (hex groups, no zone): getaddrinfo and URLs may write the last 32 bits dotted.
  const canonical = ipaddr.IPv6.parse(new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1));
  const text = canonical.toString();
  const hit = v6.find((r) => r.list.check(text, 'ipv6'));
  if (hit) return `${hit.cidr}, ${hit.name}`;
  for (const e of embedding) {
    if (!e.list.check(text, 'ipv6')) continue;
    const inner = canonical
      .toByteArray()
      .slice(e.offset, e.offset + 4)
      .join('.');
    if (!e.judged) return `${e.cidr}, ${e.name} (carries ${inner})`;
    const why = specialRangeOf(inner);
    return why ? `${e.cidr}, ${e.name} carrying ${inner} (${why})` : null;
  }
  return globalUnicast.check(text, 'ipv6') ? null : 'outside 2000::/3, not global unicast';
}

/** The ranges, for the docs' table and its test. */
export const SPECIAL_RANGES = { ipv4: IPV4, ipv6: IPV6, embedding: EMBEDDING.map(({ cidr, name, judged }) => ({ cidr, name, judged })) };
