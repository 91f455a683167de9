import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis every test uses: the local server unless REDIS_URL says otherwise. */
export const TEST_REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** A key prefix no other test (or a live service on the same Redis) uses: `test:<hex>:`. */
export function uniquePrefix(label = 'test'): string {
  return `${label}:${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under `prefix` (SCAN MATCH prefix* + UNLINK). Returns how many were removed. */
export async function cleanupPrefix(redisUrl: string = TEST_REDIS_URL, prefix: string): Promise<number> {
  if (!prefix || prefix.length < 3) throw new Error(`refusing to clean up a prefix this short: "${prefix}"`);
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  redis.on('error', () => undefined);
  let removed = 0;
  try {
    await redis.connect();
    const pattern = `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) removed += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return removed;
}

// Deletes every key matching ARGV[1] in one script: atomic, as FLUSHDB is (cleanupPrefix's SCAN lets
// keys written meanwhile survive, which is a different fault: a partial loss).
const FLUSH_MATCHING = `
local cursor, n = '0', 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = r[1]
  for i = 1, #r[2], 500 do
    n = n + redis.call('UNLINK', unpack(r[2], i, math.min(i + 499, #r[2])))
  end
until cursor == '0'
return n`;

/** FLUSHDB for one test's prefix: every key under it gone at one instant. Returns how many were removed. */
export async function flushPrefix(redisUrl: string = TEST_REDIS_URL, prefix: string): Promise<number> {
  if (!prefix || prefix.length < 3) throw new Error(`refusing to flush a prefix this short: "${prefix}"`);
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  redis.on('error', () => undefined);
  try {
    return (await redis.eval(FLUSH_MATCHING, 0, `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`)) as number;
  } finally {
    redis.disconnect();
  }
}
