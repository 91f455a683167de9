import type { Redis } from 'ioredis';
import type { RequestHandler } from 'express';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { HttpError } from '../middleware/errors';
import { apiKeyOf } from './auth';

/**
 * Requests per minute per API key, in Redis, shared by every inference route and every process:
 * RATE_LIMIT_PER_MINUTE unless an operator changed the key's limit (KeyRecord.rateLimit).
 * Fixed one-minute windows starting at a key's first request.
 *
 * One counter per key whatever its limit: limiters with different `points` share the key prefix,
 * so a raised limit applies to the current window at once.
 *
 * Every answer carries x-ratelimit-limit-requests, x-ratelimit-remaining-requests and
 * x-ratelimit-reset-requests (OpenAI's names; the reset is a duration such as "42s"); a refusal is
 * 429 with Retry-After (seconds).
 */
export class InferenceRateLimiter {
  private readonly limiters = new Map<number, RateLimiterRedis>();

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly defaultPerMinute: number,
  ) {}

  private limiter(points: number): RateLimiterRedis {
    let l = this.limiters.get(points);
    if (!l) {
      l = new RateLimiterRedis({ storeClient: this.redis, keyPrefix: this.keyPrefix, points, duration: 60 });
      this.limiters.set(points, l);
    }
    return l;
  }

  async consume(keyId: string, override: number | null): Promise<{ allowed: boolean; limit: number; remaining: number; resetMs: number }> {
    const limit = override && override > 0 ? override : this.defaultPerMinute;
    try {
      const r = await this.limiter(limit).consume(keyId, 1);
      return { allowed: true, limit, remaining: r.remainingPoints, resetMs: r.msBeforeNext };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { allowed: false, limit, remaining: 0, resetMs: err.msBeforeNext };
      throw err;
    }
  }

  middleware(): RequestHandler {
    return async (_req, res, next) => {
      const key = apiKeyOf(res);
      let r;
      try {
        r = await this.consume(key.keyId, key.rateLimit);
      } catch {
        throw new HttpError(503, 'Service temporarily unavailable: rate limits cannot be checked', { 'Retry-After': '1' });
      }
      const resetS = Math.max(1, Math.ceil(r.resetMs / 1000));
      const headers = {
        'x-ratelimit-limit-requests': String(r.limit),
        'x-ratelimit-remaining-requests': String(r.remaining),
        'x-ratelimit-reset-requests': `${resetS}s`,
      };
      res.set(headers);
      if (!r.allowed) {
        throw new HttpError(429, `Rate limit reached: ${r.limit} requests per minute for this API key. Retry in ${resetS} s.`, {
          ...headers,
          'Retry-After': String(resetS),
        });
      }
      next();
    };
  }
}
