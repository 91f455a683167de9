import { createHash, createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config';

/**
 * The Ed25519 keys that sign what the service vouches for (inference receipts): the current private
 * key and every retired public key, all published as a JWKS so a signature made before a rotation
 * still verifies. A key is its 32-byte seed in base64, like MASTER_KEY; its key id is the RFC 7638
 * JWK thumbprint of its public key, so anyone computes the same id from the public key alone.
 */
export const SIGNING_KEY_FILE = 'receipt-signing.key';
/** Retired public keys of the generated key file, one base64url `x` per line (`tollgate receipts rotate-key` appends). */
export const RETIRED_SIGNING_KEYS_FILE = 'receipt-signing.retired';

export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

export interface SigningKeys {
  current: { kid: string; privateKey: KeyObject; jwk: PublicJwk };
  /** Retired keys: they sign nothing new, but receipts they signed still verify. */
  retired: PublicJwk[];
  source: 'RECEIPT_SIGNING_KEY' | 'file';
}

// PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410): this prefix, then the 32 bytes.
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** 32 bytes in base64 (standard or url-safe), or undefined. */
export function decodeSeed(text: string): Buffer | undefined {
  const t = text.trim();
  if (!/^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(t)) return undefined;
  const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return b.length === 32 ? b : undefined;
}

export const newSeedText = (): string => randomBytes(32).toString('base64');

/** The public JWK of an Ed25519 public key given as its 32 bytes (the JWK's `x`, base64url). */
export function publicJwkOf(x: string): PublicJwk {
  // RFC 7638: the SHA-256 of the required members in lexicographic order, no whitespace.
  const kid = createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
  return { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' };
}

export function signingKeyOfSeed(seed: Buffer): SigningKeys['current'] {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x as string;
  const jwk = publicJwkOf(x);
  return { kid: jwk.kid, privateKey, jwk };
}

/** A public key given as base64url (or base64) of 32 bytes, as a JWK; undefined if it is not one. */
function retiredJwk(text: string): PublicJwk | undefined {
  const b = decodeSeed(text);
  return b ? publicJwkOf(b.toString('base64url')) : undefined;
}

/**
 * RECEIPT_SIGNING_KEY, else `${DATA_DIR}/receipt-signing.key`, generated (0600) at the first start
 * with one line saying so (`create: false` only reads: the CLI's offline verify must never make a
 * key). Retired public keys: RECEIPT_SIGNING_KEYS_RETIRED plus the lines of
 * `${DATA_DIR}/receipt-signing.retired`. A bad value stops the start with one line naming it.
 */
export function resolveSigningKeys(
  c: { RECEIPT_SIGNING_KEY?: string; RECEIPT_SIGNING_KEYS_RETIRED?: string[]; DATA_DIR: string },
  say: (line: string) => void,
  opts: { create?: boolean } = {},
): SigningKeys | undefined {
  const retired: PublicJwk[] = [];
  for (const t of c.RECEIPT_SIGNING_KEYS_RETIRED ?? []) {
    const jwk = retiredJwk(t);
    if (!jwk) throw new ConfigError(['invalid setting RECEIPT_SIGNING_KEYS_RETIRED: each must be a 32-byte public key in base64url']);
    retired.push(jwk);
  }
  const retiredFile = join(c.DATA_DIR, RETIRED_SIGNING_KEYS_FILE);
  if (existsSync(retiredFile)) {
    for (const line of readFileSync(retiredFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim())) {
      const jwk = retiredJwk(line);
      if (!jwk) throw new ConfigError([`invalid setting RECEIPT_SIGNING_KEYS_RETIRED: ${retiredFile} has a line that is not a public key`]);
      retired.push(jwk);
    }
  }
  if (c.RECEIPT_SIGNING_KEY) {
    const seed = decodeSeed(c.RECEIPT_SIGNING_KEY);
    if (!seed) throw new ConfigError(['invalid setting RECEIPT_SIGNING_KEY: must be 32 bytes in base64 (got "***")']);
    return withoutCurrent({ current: signingKeyOfSeed(seed), retired, source: 'RECEIPT_SIGNING_KEY' });
  }
  const file = join(c.DATA_DIR, SIGNING_KEY_FILE);
  if (!existsSync(file)) {
    if (opts.create === false) return undefined;
    mkdirSync(c.DATA_DIR, { recursive: true });
    try {
      // wx: two processes starting at once never overwrite each other's key.
      writeFileSync(file, newSeedText() + '\n', { mode: 0o600, flag: 'wx' });
      say(
        `RECEIPT_SIGNING_KEY is not set: generated a receipt signing key in ${file} (back it up; set RECEIPT_SIGNING_KEY to share one key between hosts)`,
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  const seed = decodeSeed(readFileSync(file, 'utf8'));
  if (!seed) throw new ConfigError([`invalid setting RECEIPT_SIGNING_KEY: unset, and ${file} does not hold 32 bytes in base64`]);
  return withoutCurrent({ current: signingKeyOfSeed(seed), retired, source: 'file' });
}

/** Retired keys without duplicates and without the current key (listed once in the JWKS). */
function withoutCurrent(k: SigningKeys): SigningKeys {
  const seen = new Set([k.current.kid]);
  return { ...k, retired: k.retired.filter((j) => !seen.has(j.kid) && seen.add(j.kid)) };
}

/** The JWKS document: the current key first, then the retired ones. */
export const jwksOf = (k: SigningKeys): { keys: PublicJwk[] } => ({ keys: [k.current.jwk, ...k.retired] });
