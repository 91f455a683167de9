import { randomBytes } from 'node:crypto';

/**
 * API key secrets: `tg_` + 48 base62 characters (~285 bits) from the CSPRNG. Only the SHA-256 of
 * the whole string is stored (events, key index); the secret is returned once, at creation.
 */
export const KEY_PREFIX = 'tg_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const LENGTH = 48;

export function generateKeySecret(): string {
  let out = '';
  while (out.length < LENGTH) {
    for (const b of randomBytes(64)) {
      // 248 = 4 × 62: rejecting bytes above it keeps every character equally likely.
      if (b < 248 && out.length < LENGTH) out += ALPHABET[b % 62];
    }
  }
  return KEY_PREFIX + out;
}

/** What the key list shows: the first 8 characters and the last 4. */
export const displayPrefix = (secret: string) => secret.slice(0, 8);
export const lastFour = (secret: string) => secret.slice(-4);
