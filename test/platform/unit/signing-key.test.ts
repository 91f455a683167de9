import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../src/platform/config';
import { publicJwkOf, resolveSigningKeys, signingKeyOfSeed } from '../../../src/platform/crypto/signing-key';

/** The receipt signing key is configured like the master key: the setting, else a file made once under DATA_DIR. */
let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'signing-key-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('unset: made at the first start under DATA_DIR (0600) with one line, then read back unchanged and silently', () => {
  const lines: string[] = [];
  const first = resolveSigningKeys({ DATA_DIR: dir }, (l) => lines.push(l))!;
  expect(lines).toEqual([
    expect.stringMatching(/^RECEIPT_SIGNING_KEY is not set: generated a receipt signing key in .*receipt-signing\.key/),
  ]);
  expect(statSync(join(dir, 'receipt-signing.key')).mode & 0o777).toBe(0o600);
  const second = resolveSigningKeys({ DATA_DIR: dir }, (l) => lines.push(l))!;
  expect(lines).toHaveLength(1);
  expect([second.current.kid, second.source]).toEqual([first.current.kid, 'file']);
});

test('read only (the CLI): no file, no key, nothing made', () => {
  expect(resolveSigningKeys({ DATA_DIR: dir }, () => undefined, { create: false })).toBeUndefined();
  expect(existsSync(join(dir, 'receipt-signing.key'))).toBe(false);
});

test('the setting wins; the kid is the RFC 7638 thumbprint; retired keys are published once, never the current one twice', () => {
  const a = signingKeyOfSeed(Buffer.alloc(32, 1));
  const b = signingKeyOfSeed(Buffer.alloc(32, 2));
  // RFC 8037 appendix A.3's key and thumbprint.
  expect(publicJwkOf('11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo').kid).toBe('kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
  writeFileSync(join(dir, 'receipt-signing.retired'), `${a.jwk.x}\n`);
  const k = resolveSigningKeys(
    { RECEIPT_SIGNING_KEY: Buffer.alloc(32, 2).toString('base64'), RECEIPT_SIGNING_KEYS_RETIRED: [a.jwk.x, b.jwk.x], DATA_DIR: dir },
    () => undefined,
  )!;
  expect([k.source, k.current.kid, k.retired.map((j) => j.kid)]).toEqual(['RECEIPT_SIGNING_KEY', b.kid, [a.kid]]);
});

test('a bad key, in the setting or the file, stops the start with one line naming the setting', () => {
  expect(() => loadConfig({ RECEIPT_SIGNING_KEY: 'short' })).toThrow(/RECEIPT_SIGNING_KEY/);
  expect(() => loadConfig({ RECEIPT_SIGNING_KEYS_RETIRED: 'abc,def' })).toThrow(/RECEIPT_SIGNING_KEYS_RETIRED/);
  writeFileSync(join(dir, 'receipt-signing.key'), 'not a key\n');
  expect(() => resolveSigningKeys({ DATA_DIR: dir }, () => undefined)).toThrow(ConfigError);
  expect(() => resolveSigningKeys({ DATA_DIR: dir }, () => undefined)).toThrow(
    /invalid setting RECEIPT_SIGNING_KEY: unset, and .* does not hold/,
  );
  expect(readFileSync(join(dir, 'receipt-signing.key'), 'utf8')).toBe('not a key\n');
});
