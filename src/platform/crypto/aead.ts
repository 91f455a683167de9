import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM, the one cipher of tollgate's data at rest (docs/SECURITY.md). A sealed value is
 * base64 of iv (12 bytes) | tag (16 bytes) | ciphertext. `aad` binds it to where it belongs (event
 * type, field, subject): a value copied into another event or subject does not open.
 */
const IV = 12;
const TAG = 16;

export function seal(key: Buffer, plain: Buffer | string, aad: string): string {
  const iv = randomBytes(IV);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([c.update(typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64');
}

/** Throws when the key is wrong or the value was altered (GCM's tag). */
export function open(key: Buffer, sealed: string, aad: string): Buffer {
  const b = Buffer.from(sealed, 'base64');
  const d = createDecipheriv('aes-256-gcm', key, b.subarray(0, IV));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(b.subarray(IV, IV + TAG));
  return Buffer.concat([d.update(b.subarray(IV + TAG)), d.final()]);
}

/** A short public id of a master key (a fingerprint, not the key): what a wrapped data key names. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update('tollgate master key id').update(key).digest('hex').slice(0, 16);
}

/** A secret derived from the master key for one purpose (HMAC-SHA256 as a KDF, RFC 5869's extract step). */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return createHmac('sha256', master).update(`tollgate:${purpose}`).digest();
}
