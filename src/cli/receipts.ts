/* eslint-disable @typescript-eslint/no-require-imports -- lazy requires: `tollgate --help` loads no service */
import { Command } from 'commander';
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail } from './context';

const signature = () => require('../inference') as typeof import('../inference');
const signingKey = () => require('../platform/crypto/signing-key') as typeof import('../platform/crypto/signing-key');

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    fail(`cannot read the ${what} ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    fail(`the ${what} ${file} is not JSON`);
  }
}

function configOrFail() {
  const { loadConfig } = require('../platform/config') as typeof import('../platform/config');
  const { describeStartupError } = require('../platform/startup-error') as typeof import('../platform/startup-error');
  try {
    return loadConfig();
  } catch (err) {
    fail(describeStartupError(err));
  }
}

/**
 * `tollgate receipts verify <file>`: checks a receipt's signature offline, against a saved copy of
 * GET /.well-known/jwks.json (--jwks) or, on a host of the service, its configured keys (never made
 * here). `tollgate receipts rotate-key`: a new generated signing key, the old one kept as retired.
 */
export function receiptsCommand(): Command {
  const cmd = new Command('receipts').description('signed inference receipts (docs/INFERENCE.md, "Verifying a receipt")');
  cmd
    .command('verify')
    .argument('<file>', 'a receipt as GET …/requests/{requestId} answered it (JSON)')
    .option('--jwks <file>', 'the public keys: a saved GET /.well-known/jwks.json (default: this host’s configured keys)')
    .description('check a receipt’s Ed25519 signature offline; exit 1 if it does not verify')
    .action((file: string, o: { jwks?: string }) => {
      const receipt = readJson(file, 'receipt') as import('../inference').Receipt;
      if (!receipt || typeof receipt !== 'object' || typeof receipt.requestId !== 'string') fail(`${file} is not a receipt`);
      let keys: { keys: Array<{ kid?: string; kty?: string; crv?: string; x?: string }> };
      if (o.jwks) {
        keys = readJson(o.jwks, 'key set') as typeof keys;
        if (!keys || !Array.isArray(keys.keys)) fail(`${o.jwks} is not a JWKS (an object with a "keys" list)`);
      } else {
        const c = configOrFail();
        let k;
        try {
          k = signingKey().resolveSigningKeys(c, () => undefined, { create: false });
        } catch (err) {
          fail((err as Error).message);
        }
        if (!k)
          fail(
            `no signing key here (RECEIPT_SIGNING_KEY unset, no ${join(c.DATA_DIR, signingKey().SIGNING_KEY_FILE)}): pass --jwks <file>`,
          );
        keys = signingKey().jwksOf(k);
      }
      const check = signature().verifyReceipt(receipt, keys);
      if (!check.ok) {
        process.stdout.write(`INVALID: request ${receipt.requestId}: ${check.reason}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`valid: request ${receipt.requestId}, cost ${receipt.cost} USD, signed by key ${check.kid}\n`);
    });
  cmd
    .command('rotate-key')
    .description('the generated key file only: make a new signing key and keep the old one published as retired (restart the service)')
    .action(() => {
      const c = configOrFail();
      const sk = signingKey();
      if (c.RECEIPT_SIGNING_KEY)
        fail('RECEIPT_SIGNING_KEY is set: rotate by setting it to a new key and adding the old public key to RECEIPT_SIGNING_KEYS_RETIRED');
      let old;
      try {
        old = sk.resolveSigningKeys(c, () => undefined, { create: false });
      } catch (err) {
        fail((err as Error).message);
      }
      if (!old) fail(`no ${join(c.DATA_DIR, sk.SIGNING_KEY_FILE)} to rotate: the service makes one at its first start`);
      // Retired first: if the process dies between the two writes, the old key is still published.
      appendFileSync(join(c.DATA_DIR, sk.RETIRED_SIGNING_KEYS_FILE), old.current.jwk.x + '\n', { mode: 0o600 });
      const file = join(c.DATA_DIR, sk.SIGNING_KEY_FILE);
      const text = sk.newSeedText();
      writeFileSync(`${file}.new`, text + '\n', { mode: 0o600 });
      renameSync(`${file}.new`, file);
      const next = sk.signingKeyOfSeed(sk.decodeSeed(text)!);
      process.stdout.write(`new signing key ${next.kid}; ${old.current.kid} retired (still in the JWKS): restart the service\n`);
    });
  return cmd;
}
