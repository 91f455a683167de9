import { isPrivateAddress, targetProblem } from '../../../src/webhooks/target-guard';

describe('webhook target guard', () => {
  test.each(['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:10.0.0.1'])('%s is private', (a) => {
    expect(isPrivateAddress(a)).toBe(true);
  });
  test.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1'])('%s is public', (a) => {
    expect(isPrivateAddress(a)).toBe(false);
  });
  test('schemes and credentials are refused even when private targets are allowed', async () => {
    expect(await targetProblem('ftp://example.com/', true)).toBe('url must be an absolute http or https URL');
    expect(await targetProblem('not a url', true)).toBe('url must be an absolute http or https URL');
    expect(await targetProblem('https://u:p@example.com/', true)).toBe('url must not contain credentials');
    expect(await targetProblem('http://127.0.0.1:9/', true)).toBeNull();
    expect(await targetProblem('http://127.0.0.1:9/', false)).toBe('url points to a private, loopback or link-local address');
    expect(await targetProblem('http://localhost/', false)).toBe('url points to a private, loopback or link-local address');
    expect(await targetProblem('http://93.184.216.34/', false)).toBeNull();
  });
});
