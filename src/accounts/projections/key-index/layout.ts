/**
 * The key index's Redis layout, written down once: the projection writes it, the lookups (the
 * queries, which also resolve where the records live, and the inference admission scripts) read it. Under the projection's generation:
 *
 *   rm:keys:{gen}:hash:{sha256hex}  hash: the key's record (KEY_FIELDS)
 *   rm:keys:{gen}:key:{keyId}       set: the hashes of a rolled key (current and previous secrets)
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
 * What separates the generation from the key hash in a record's key: a Lua script that resolves
 * the generation itself builds `prefix .. gen .. KEY_RECORD_INFIX .. hash`.
 */
export const KEY_RECORD_INFIX = ':hash:';

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
