import { createHmac } from 'node:crypto';
import { deriveKey } from './aead';
import type { KeyStore } from './key-store';
import type { MasterKeys } from './master-key';

/** The key store's subject holding the secret of the keyed hashes that name lookup streams (email-{hmac}). */
export const LOOKUP_SUBJECT = 'system:lookup';

/**
 * The secret of Services.lookupHash. It must outlive a master-key rotation: the claim streams are
 * named with it, so a new secret would lose every address claimed before (logins fail, an address
 * signs up twice). It is kept as a data key (wrapped by the master key, re-wrapped by
 * `tollgate keys rotate-master`); the first start makes it from the master key as the release
 * that sealed personal data first did (HMAC, purpose `lookup`), so the streams it named stay found.
 */
export async function lookupHasher(keys: KeyStore, master: MasterKeys): Promise<(value: string) => string> {
  const secret = await keys.getOrCreate(LOOKUP_SUBJECT, deriveKey(master.current.key, 'lookup'));
  return (value) => createHmac('sha256', secret).update(value).digest('hex');
}
