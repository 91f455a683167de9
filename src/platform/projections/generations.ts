import type { Redis } from 'ioredis';
import { Keyspace } from './keyspace';
import { luaScript } from '../redis-scripts';
import { scanAll, unlinkScanned } from '../redis';

const CLAIM_ORPHAN = luaScript('platform/projections/claim-orphan.lua', { keys: ['building', 'lock', 'active', 'pending'], args: ['gen'] });

/** Deletes every key of one generation of a projection (its own and its workspaces', on every primary). */
export async function dropGeneration(redis: Redis, ks: Keyspace, name: string, gen: string): Promise<number> {
  let dropped = 0;
  for (const pattern of [`${globEscape(ks.genPrefix(name, gen))}*`, `${globEscape(ks.wsGenPrefix(name, gen))}{ws:*`])
    await scanAll(redis, pattern, async (node, keys) => void (dropped += await unlinkScanned(redis, node, keys)));
  return dropped;
}

/** `s` matched literally in a SCAN pattern. */
export function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * Removes the generations that rebuilds started and never finished (the process was killed): any
 * generation in the building set that no lock holds and no reader uses. Returns the generations dropped.
 */
export async function dropAbandonedGenerations(redis: Redis, ks: Keyspace, name: string): Promise<string[]> {
  const dropped: string[] = [];
  for (const gen of await redis.smembers(ks.building(name))) {
    const claimed = (await CLAIM_ORPHAN.eval(
      redis,
      { building: ks.building(name), lock: ks.rebuildLock(name), active: ks.active(name), pending: ks.pending(name) },
      { gen },
    )) as number;
    if (claimed !== 1) continue;
    await dropGeneration(redis, ks, name, gen);
    dropped.push(gen);
  }
  return dropped;
}
