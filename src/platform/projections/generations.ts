import type { Redis } from 'ioredis';
import { Keyspace } from './keyspace';

// KEYS: building set, lock, active pointer, pending. ARGV: generation. Claims a generation for deletion if
// no rebuild holds it and no reader uses it.
const CLAIM_ORPHAN = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then return 0 end
local v = redis.call('GET', KEYS[2])
if v and cjson.decode(v).generation == ARGV[1] then return 0 end
if (redis.call('GET', KEYS[3]) or '0') == ARGV[1] then redis.call('SREM', KEYS[1], ARGV[1]) return 0 end
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('DEL', KEYS[4]) end
return 1`;

/** Deletes every key of one generation of a projection. */
export async function dropGeneration(redis: Redis, ks: Keyspace, name: string, gen: string): Promise<number> {
  let cursor = '0';
  let dropped = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${ks.genPrefix(name, gen)}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) dropped += await redis.unlink(...keys);
  } while (cursor !== '0');
  return dropped;
}

/**
 * Removes the generations that rebuilds started and never finished (the process was killed): any
 * generation in the building set that no lock holds and no reader uses. Returns the generations dropped.
 */
export async function dropAbandonedGenerations(redis: Redis, ks: Keyspace, name: string): Promise<string[]> {
  const dropped: string[] = [];
  for (const gen of await redis.smembers(ks.building(name))) {
    const claimed = (await redis.eval(CLAIM_ORPHAN, 4, ks.building(name), ks.rebuildLock(name), ks.active(name), ks.pending(name), gen)) as number;
    if (claimed !== 1) continue;
    await dropGeneration(redis, ks, name, gen);
    dropped.push(gen);
  }
  return dropped;
}

