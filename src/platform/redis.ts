import { Redis, RedisOptions } from 'ioredis';

export class RedisUnavailable extends Error {
  override readonly name = 'RedisUnavailable';
}

/** How long a start-up connect and its first PING may take (REDIS_CONNECT_TIMEOUT_MS). */
export const DEFAULT_REDIS_CONNECT_TIMEOUT_MS = 10_000;

/**
 * A connection that is known to work when this resolves, or a one-line reason naming REDIS_URL.
 * `timeoutMs` bounds the connect and the first PING each: a busy host answers late, not never.
 */
export async function connectRedis(
  url: string,
  name: string,
  extra: RedisOptions = {},
  timeoutMs = DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
): Promise<Redis> {
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
    await withTimeout(redis.connect(), timeoutMs);
    await withTimeout(redis.ping(), timeoutMs);
  } catch (err) {
    redis.disconnect();
    // ioredis rejects connect() with a bare "Connection is closed."; the socket error says why.
    const reason = (firstError as Error | null)?.message || (err as Error).message || 'timed out';
    const hint = /no answer within/.test(reason) ? ' (REDIS_CONNECT_TIMEOUT_MS)' : '';
    throw new RedisUnavailable(`cannot reach Redis at REDIS_URL=${redactUrl(url)}: ${reason}${hint}`);
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
