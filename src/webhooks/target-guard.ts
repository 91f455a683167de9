import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The SSRF guard: a webhook URL must be http(s) and resolve only to public addresses, unless the
 * operator allows private targets (WEBHOOKS_ALLOW_PRIVATE_TARGETS). Checked at registration and
 * again before every delivery, since a name can resolve elsewhere later.
 */
const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) blocked.addSubnet(net, bits, 'ipv6');

export function isPrivateAddress(address: string): boolean {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4mapped) return blocked.check(v4mapped[1], 'ipv4');
  return blocked.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** Why the URL may not be a webhook target, or null when it may. */
export async function targetProblem(raw: string, allowPrivate: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url must be an absolute http or https URL';
  if (url.username || url.password) return 'url must not contain credentials';
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `url's host ${host} does not resolve`;
  }
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) return 'url points to a private, loopback or link-local address';
  return null;
}
