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
