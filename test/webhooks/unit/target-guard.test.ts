import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, fetch } from 'undici';
import { guardedLookup, isPrivateAddress, targetProblem } from '../../../src/webhooks/target-guard';
import { specialRangeOf } from '../../../src/webhooks/special-ranges';

/** Every special-purpose range of IANA's IPv4 and IPv6 registries, IPv4 carried inside IPv6, and public neighbours. */
const refused: [address: string, range: string][] = [
  ['0.0.0.0', '0.0.0.0/8'],
  ['0.255.255.255', '0.0.0.0/8'],
  ['10.0.0.1', '10.0.0.0/8'],
  ['100.64.0.1', '100.64.0.0/10'],
  ['100.127.255.254', '100.64.0.0/10'],
  ['127.0.0.1', '127.0.0.0/8'],
  ['127.255.255.255', '127.0.0.0/8'],
  ['169.254.169.254', '169.254.0.0/16'],
  ['172.16.5.4', '172.16.0.0/12'],
  ['172.31.255.255', '172.16.0.0/12'],
  ['192.0.0.9', '192.0.0.0/24'],
  ['192.0.2.4', '192.0.2.0/24'],
  ['192.31.196.1', '192.31.196.0/24'],
  ['192.52.193.1', '192.52.193.0/24'],
  ['192.88.99.1', '192.88.99.0/24'],
  ['192.168.1.1', '192.168.0.0/16'],
  ['192.175.48.1', '192.175.48.0/24'],
  ['198.18.0.1', '198.18.0.0/15'],
  ['198.19.255.255', '198.18.0.0/15'],
  ['198.51.100.7', '198.51.100.0/24'],
  ['203.0.113.9', '203.0.113.0/24'],
  ['224.0.0.1', '224.0.0.0/4'],
  ['239.255.255.250', '224.0.0.0/4'],
  ['240.0.0.1', '240.0.0.0/4'],
  ['255.255.255.255', '240.0.0.0/4'],
  ['::', '::/128'],
  ['::1', '::1/128'],
  ['::ffff:127.0.0.1', '::ffff:0:0/96'],
  ['::ffff:a00:1', '::ffff:0:0/96'],
  ['::ffff:192.0.2.1', '::ffff:0:0/96'],
  ['::127.0.0.1', '::/96'],
  ['::8.8.8.8', '::/96'],
  ['64:ff9b::127.0.0.1', '64:ff9b::/96'],
  ['64:ff9b::c000:204', '64:ff9b::/96'],
  ['64:ff9b::a9fe:a9fe', '64:ff9b::/96'],
  ['64:ff9b:1::808:808', '64:ff9b:1::/48'],
  ['100::1', '100::/64'],
  ['2001::1', '2001::/23'],
  ['2001:1ff:ffff::1', '2001::/23'],
  ['2001:db8::1', '2001:db8::/32'],
  ['2002:7f00:1::1', '2002::/16'],
  ['2002:c000:204::1', '2002::/16'],
  ['2002:a00:1::', '2002::/16'],
  ['2620:4f:8000::1', '2620:4f:8000::/48'],
  ['3fff::1', '3fff::/20'],
  ['5f00::1', '5f00::/16'],
  ['fc00::1', 'fc00::/7'],
  ['fd12:3456::1', 'fc00::/7'],
  ['fe80::1', 'fe80::/10'],
  ['fe80::1%eth0', 'fe80::/10'],
  ['fec0::1', 'fec0::/10'],
  ['ff02::1', 'ff00::/8'],
  ['4000::1', 'outside 2000::/3'],
  ['not-an-address', 'not an IP address'],
];

const allowed = [
  '8.8.8.8',
  '93.184.216.34',
  '1.1.1.1',
  '172.32.0.1',
  '172.15.255.255',
  '100.128.0.1',
  '192.0.3.1',
  '192.88.100.1',
  '198.20.0.1',
  '223.255.255.255',
  '2606:4700:4700::1111',
  '2a00:1450:4001::200e',
  '2001:200::1',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
];

describe('webhook target guard: the address table', () => {
  test.each(refused)('%s is refused (%s)', (address, range) => {
    const why = specialRangeOf(address);
    expect(why).not.toBeNull();
    expect(why!.startsWith(range)).toBe(true);
    expect(isPrivateAddress(address)).toBe(true);
  });

  test.each(allowed)('%s is public', (address) => {
    expect(specialRangeOf(address)).toBeNull();
  });

  test('an IPv6 form names the IPv4 address it carries', () => {
    expect(specialRangeOf('64:ff9b::7f00:1')).toBe('64:ff9b::/96, NAT64 carrying 127.0.0.1 (127.0.0.0/8, loopback)');
    expect(specialRangeOf('2002:c000:204::1')).toBe('2002::/16, 6to4 carrying 192.0.2.4 (192.0.2.0/24, documentation (TEST-NET-1))');
  });
});

describe('webhook target guard: URLs', () => {
  test('schemes and credentials are refused even when private targets are allowed', async () => {
    expect(await targetProblem('ftp://example.com/', true)).toBe('url must be an absolute http or https URL');
    expect(await targetProblem('not a url', true)).toBe('url must be an absolute http or https URL');
    expect(await targetProblem('https://u:p@example.com/', true)).toBe('url must not contain credentials');
    expect(await targetProblem('http://127.0.0.1:9/', true)).toBeNull();
  });

  test.each([
    'http://127.0.0.1:9/',
    'http://localhost/',
    'http://192.0.2.10/hook',
    'http://198.51.100.1/',
    'http://203.0.113.5/',
    'http://192.88.99.1/',
    'http://[::127.0.0.1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[64:ff9b::10.0.0.1]/',
    'http://[2002:c0a8:101::1]/',
    'http://[fe80::1]/',
    'http://0x7f.1/',
    'http://2130706433/',
  ])('%s is refused when private targets are not allowed', async (url) => {
    expect(await targetProblem(url, false)).toMatch(/^url points to .*, in .*: a webhook must reach a public address$/);
  });

  test('public literal addresses pass, and a name that does not resolve is refused', async () => {
    expect(await targetProblem('http://93.184.216.34/', false)).toBeNull();
    expect(await targetProblem('https://[2606:4700:4700::1111]/', false)).toBeNull();
    expect(await targetProblem('https://no-such-host.invalid/', false)).toBe("url's host no-such-host.invalid does not resolve");
  });
});

describe('webhook target guard: the connection', () => {
  let server: Server;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('a name that resolves to a refused address is never connected to', async () => {
    const port = (server.address() as AddressInfo).port;
    const open = new Agent();
    const guarded = new Agent({ connect: { lookup: guardedLookup } });
    try {
      // Reachable without the guard: the refusal below is the guard's, not a dead port.
      expect((await fetch(`http://localhost:${port}/`, { dispatcher: open })).status).toBe(200);
      expect(hits).toBe(1);
      const err = await fetch(`http://localhost:${port}/`, { dispatcher: guarded }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect(String((err as Error & { cause?: Error }).cause?.message)).toMatch(
        /^url points to (127\.0\.0\.1|::1), in .*: a webhook must reach a public address$/,
      );
      expect(hits).toBe(1);
    } finally {
      await open.close();
      await guarded.close();
    }
  });
});
