import type { Redis } from 'ioredis';
import type { Keyspace } from '../platform/projections/keyspace';

/**
 * When each API key was last used, for the key list. The inference path writes it; it is not an
 * event (it would double the event volume) and not part of any projection.
 *
 *   {prefix}key-last-used  hash: keyId → ISO-8601 time of the last request
 */
export const lastUsedKey = (ks: Keyspace) => ks.shared('key-last-used');

export async function touchKeyLastUsed(redis: Redis, ks: Keyspace, keyId: string, iso: string): Promise<void> {
  await redis.hset(lastUsedKey(ks), keyId, iso);
}

export async function keysLastUsed(redis: Redis, ks: Keyspace, keyIds: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (!keyIds.length) return out;
  const vals = await redis.hmget(lastUsedKey(ks), ...keyIds);
  keyIds.forEach((id, i) => out.set(id, vals[i] ?? null));
  return out;
}

export async function forgetKeyLastUsed(redis: Redis, ks: Keyspace, keyId: string): Promise<void> {
  await redis.hdel(lastUsedKey(ks), keyId);
}
