/**
 * The key index's Redis layout, written down once: the projection writes it, the lookup (the
 * queries: KeyIndex.lookupHash, which inference admission calls) reads it. Under the projection's
 * generation, all under the key index's own hash tag (`{keys}`: a lookup knows only the secret's
 * hash, not the workspace), so the projection's scripts that touch a rolled key's two records and
 * its set run on one Redis Cluster slot:
 *
 *   rm:{keys}:{gen}:hash:{sha256hex}  hash: the key's record (KEY_FIELDS)
 *   rm:{keys}:{gen}:key:{keyId}       set: the hashes of a rolled key (current and previous secrets)
 */
export const KEY_INDEX = 'keys';

/** The parts after the generation (for `tx.key(...)` in the projection). */
export const keyIndexParts = {
  /** A key's record, by the SHA-256 (hex) of its secret. */
  record: (keyHash: string) => ['hash', keyHash] as const,
  /** The hashes of a rolled key, by its id. */
  secrets: (keyId: string) => ['key', keyId] as const,
};

/**
 * The fields of a record: keyId, workspaceId, name, scopes (comma list), expiresAt (ISO or ""),
 * rateLimit (requests/min or ""), rolledAway ("1" on a rolled key's previous secret).
 */
export const KEY_FIELDS = {
  keyId: 'keyId',
  workspaceId: 'workspaceId',
  name: 'name',
  scopes: 'scopes',
  expiresAt: 'expiresAt',
  rateLimit: 'rateLimit',
  rolledAway: 'rolledAway',
} as const;
