import { Redis, RedisOptions } from 'ioredis';

export class RedisUnavailable extends Error {
  override readonly name = 'RedisUnavailable';
}

/** A connection that is known to work when this resolves, or a one-line reason naming REDIS_URL. */
export async function connectRedis(url: string, name: string, extra: RedisOptions = {}): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectionName: `tollgate:${name}`,
    maxRetriesPerRequest: 3,
    retryStrategy: (times) => Math.min(times * 100, 2000),
    ...extra,
  });
  redis.on('error', () => undefined); // reported through command failures and readiness instead
  try {
    await withTimeout(redis.connect(), 3000);
    await withTimeout(redis.ping(), 3000);
  } catch (err) {
    redis.disconnect();
    throw new RedisUnavailable(`cannot reach Redis at REDIS_URL=${redactUrl(url)}: ${(err as Error).message || 'timed out'}`);
  }
  return redis;
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, '//***@');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}
