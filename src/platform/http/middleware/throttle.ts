import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { HttpError } from './errors';

/**
 * A fixed-window counter in Redis (rate-limiter-flexible), shared by every api process. `take`
 * counts one attempt and refuses with 429 + Retry-After once the window's budget is spent.
 * Keys are hashed so that no e-mail address or client address is written into Redis in clear.
 */
export class Throttle {
  private readonly limiter: RateLimiterRedis;

  constructor(
    redis: Redis,
    keyPrefix: string,
    readonly points: number,
    readonly windowSeconds: number,
  ) {
    this.limiter = new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration: windowSeconds });
  }

  /** Counts one attempt; throws 429 `refusal(retryAfterSeconds)` when over the budget. */
  async take(key: string, refusal: (retryAfterS: number) => string): Promise<void> {
    try {
      await this.limiter.consume(hashKey(key), 1);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) {
        throw new HttpError(503, 'Service temporarily unavailable: limits cannot be checked', { 'Retry-After': '1' });
      }
      const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new HttpError(429, refusal(retryAfter), { 'Retry-After': String(retryAfter) });
    }
  }

  /** Forgets the key's attempts (a successful login clears its e-mail's failures). */
  async reset(key: string): Promise<void> {
    await this.limiter.delete(hashKey(key)).catch(() => undefined);
  }
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 32);
