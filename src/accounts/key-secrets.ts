import { randomBytes } from 'node:crypto';

/**
 * API key secrets (docs/ACCOUNTS.md, "Key format"). A key is purely alphanumeric, as the spec says:
 *
 *   tgk + 43 base62 characters from the CSPRNG (~256 bits) + 6 base62 characters of checksum
 *   (CRC-32 of the random part)                                   = 52 characters, e.g. tgk7Qm…Xb01Zr
 *
 * The fixed prefix lets secret scanners and our own 401 recognise a tollgate key; the checksum tells
 * a mistyped or truncated key from one that was never ours, without any lookup. Keys issued before
 * this format (`tg_` + 48 base62 characters) keep working: only the SHA-256 of the whole string is
 * stored (events, key index), and the secret is returned once, at creation.
 */
export const KEY_PREFIX = 'tgk';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
export const KEY_LENGTH = KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH;
const LEGACY = /^tg_[0-9A-Za-z]{48}$/;
const CURRENT = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(64)) {
      // 248 = 4 × 62: rejecting bytes above it keeps every character equally likely.
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(text: string): number {
  let c = 0xffffffff;
  for (let i = 0; i < text.length; i++) c = CRC_TABLE[(c ^ text.charCodeAt(i)) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** CRC-32 in base62, left-padded to 6 characters (62^6 > 2^32). */
function checksum(random: string): string {
  let n = crc32(random);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A new key secret. The one generator: creating and rolling a key both use it. */
export function generateKeySecret(): string {
  const random = randomBase62(RANDOM_LENGTH);
  return KEY_PREFIX + random + checksum(random);
}

/**
 * What a presented secret is, before any lookup:
 * - `key`: a well-formed key (current format with a valid checksum, or the legacy format);
 * - `mistyped`: starts like a tollgate key but its length or checksum is wrong;
 * - `foreign`: not a tollgate key at all (another provider's, or garbage).
 */
export type KeyShape = 'key' | 'mistyped' | 'foreign';

export function keyShape(secret: string): KeyShape {
  if (LEGACY.test(secret)) return 'key';
  if (CURRENT.test(secret)) {
    const random = secret.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_LENGTH);
    return secret.slice(-CHECKSUM_LENGTH) === checksum(random) ? 'key' : 'mistyped';
  }
  return secret.startsWith(KEY_PREFIX) || secret.startsWith('tg_') ? 'mistyped' : 'foreign';
}

/** What the key list shows: the first 8 characters and the last 4. */
export const displayPrefix = (secret: string) => secret.slice(0, 8);
export const lastFour = (secret: string) => secret.slice(-4);
