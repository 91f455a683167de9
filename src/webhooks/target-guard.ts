import { lookup } from 'node:dns';
import { lookup as lookupAll } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { specialRangeOf } from './special-ranges';

/**
 * The SSRF guard: a webhook URL must be http(s) and resolve only to public addresses (./special-ranges.ts),
 * unless the operator allows private targets (WEBHOOKS_ALLOW_PRIVATE_TARGETS). Checked at registration,
 * again before every delivery, and a third time on the address the delivery connects to
 * (`guardedLookup`), since a name can resolve elsewhere between the check and the connection.
 */

export function isPrivateAddress(address: string): boolean {
  return specialRangeOf(address) !== null;
}

const refusal = (address: string, why: string) => `url points to ${address}, in ${why}: a webhook must reach a public address`;

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
    addresses = isIP(host) ? [host] : (await lookupAll(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `url's host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `url's host ${host} does not resolve`;
  for (const a of addresses) {
    const why = specialRangeOf(a);
    if (why) return refusal(a, why);
  }
  return null;
}

/**
 * A `lookup` for net/tls.connect (undici's `connect` option) that fails when any address the name
 * resolves to is refused, so the socket only ever opens to an address that was checked.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as unknown as { address: string; family: number }[];
    for (const a of list) {
      const why = specialRangeOf(a.address);
      if (why) return callback(Object.assign(new Error(refusal(a.address, why)), { code: 'ERR_WEBHOOK_TARGET_REFUSED' }), '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
    callback(null, list[0].address, list[0].family);
  });
};
