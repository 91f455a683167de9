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
  // Reported through command failures and readiness instead; the first one explains a failed connect.
  let firstError: Error | null = null;
  redis.on('error', (err: Error) => (firstError ??= err));
  try {
    await withTimeout(redis.connect(), 3000);
    await withTimeout(redis.ping(), 3000);
  } catch (err) {
    redis.disconnect();
    // ioredis rejects connect() with a bare "Connection is closed."; the socket error says why.
    const reason = (firstError as Error | null)?.message || (err as Error).message || 'timed out';
    throw new RedisUnavailable(`cannot reach Redis at REDIS_URL=${redactUrl(url)}: ${reason}`);
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
