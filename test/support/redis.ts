import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { disconnectRedis } from '../../src/platform/redis';

/** The Redis every test uses: the local server unless REDIS_URL says otherwise. */
export const TEST_REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * What every prefix of this test run starts with: `run-<hex>:`, set once per `jest` run by
 * test/support/global-setup.js (other runs on the same Redis have their own), so the check at the
 * end of the run (global-teardown.ts) finds what this run left behind and nothing else. Empty
 * outside jest (the benches).
 */
export const TEST_RUN_PREFIX = process.env.TEST_RUN_PREFIX ?? '';

/** A key prefix no other test (or a live service on the same Redis) uses: `<run>test:<hex>:`. */
export function uniquePrefix(label = 'test'): string {
  return `${TEST_RUN_PREFIX}${label}:${randomBytes(6).toString('hex')}:`;
}

/**
 * TEST_REDIS_URL with its host and port replaced (a relay or proxy in front of it): its db index
 * and credentials kept, so what goes through the relay reaches the same keys.
 */
export function testRedisUrlVia(host: string, port: number): string {
  const u = new URL(TEST_REDIS_URL);
  u.hostname = host;
  u.port = String(port);
  return u.toString();
}

/** Where TEST_REDIS_URL points, for a relay or proxy to forward to. */
export function testRedisAddress(): { host: string; port: number } {
  const u = new URL(TEST_REDIS_URL);
  return { host: u.hostname, port: Number(u.port || 6379) };
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
    disconnectRedis(redis);
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
    disconnectRedis(redis);
  }
}
