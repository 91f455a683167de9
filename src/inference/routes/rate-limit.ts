import type { Redis } from 'ioredis';
import type { RequestHandler, Response } from 'express';
import { apiKeyOf } from './auth';
import { HttpError } from '../../platform/http/middleware/errors';
import { wsTag } from '../../platform/projections/keyspace';

/**
 * Requests per minute per API key, in Redis, shared by every inference route and every process:
 * RATE_LIMIT_PER_MINUTE unless an operator changed the key's limit (KeyRecord.rateLimit).
 * Fixed one-minute windows starting at a key's first request.
 *
 * One counter per key whatever its limit, so a raised limit applies to the current window at once.
 *
 * Every answer carries x-ratelimit-limit-requests, x-ratelimit-remaining-requests and
 * x-ratelimit-reset-requests (OpenAI's names; the reset is a duration such as "42s"); a refusal is
 * 429 with Retry-After (seconds).
 *
 * The counter is counted as rate-limiter-flexible's RateLimiterRedis counts (the same fixed window
 * from a key's first request), under the key's workspace's hash tag (rateCounterKey), inside the
 * admission script (./admit.lua) in two commands, in the same round trip as the reservation; that
 * script also decides whether the request is within the limit.
 */

export const WINDOW_SECONDS = 60;

/** A key's counter: `{counterPrefix}:{ws:<id>}:{keyId}`, in its workspace's slot (the admission script's). */
export function rateCounterKey(counterPrefix: string, workspaceId: string, keyId: string): string {
  return `${counterPrefix}:${wsTag(workspaceId)}:${keyId}`;
}

/**
 * A request counted in its key's window by the admission script: the count so far, the milliseconds
 * left in the window, the limit that applied and the script's verdict.
 */
export interface Counted {
  count: number;
  msLeft: number;
  limit: number;
  allowed: boolean;
}

export interface RateVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetMs: number;
}

/** The admission script's verdict as the answer shows it. */
export function rateVerdict({ count, msLeft, limit, allowed }: Counted): RateVerdict {
  return { allowed, limit, remaining: allowed ? Math.max(limit - count, 0) : 0, resetMs: msLeft };
}

/** OpenAI's rate-limit header names; the reset is a duration such as "42s". */
function rateHeadersOf(r: RateVerdict) {
  const resetS = Math.max(1, Math.ceil(r.resetMs / 1000));
  const headers = {
    'x-ratelimit-limit-requests': String(r.limit),
    'x-ratelimit-remaining-requests': String(r.remaining),
    'x-ratelimit-reset-requests': `${resetS}s`,
  };
  return { resetS, headers };
}

/** Sets the rate-limit headers on the answer; throws the 429 when the request is over the limit. */
export function applyRateVerdict(res: Response, r: RateVerdict): void {
  const { resetS, headers } = rateHeadersOf(r);
  res.set(headers);
  if (!r.allowed) {
    throw new HttpError(429, `Rate limit reached: ${r.limit} requests per minute for this API key. Retry in ${resetS} s.`, {
      ...headers,
      'Retry-After': String(resetS),
    });
  }
}

/**
 * The rate-limit headers on an authenticated answer that does not count (the model list): the key's
 * window as it stands. A Redis failure leaves them off rather than failing the answer.
 */
export function rateHeadersOnly(redis: Redis, counterPrefix: string, defaultPerMinute: number): RequestHandler {
  return async (_req, res, next) => {
    const key = apiKeyOf(res);
    const counter = rateCounterKey(counterPrefix, key.workspaceId, key.keyId);
    const seen = await Promise.all([redis.get(counter), redis.pttl(counter)]).catch(() => undefined);
    if (seen) {
      const [count, ttl] = seen;
      const limit = key.rateLimit && key.rateLimit > 0 ? key.rateLimit : defaultPerMinute;
      const used = Number(count ?? 0);
      res.set(
        rateHeadersOf({
          allowed: used < limit,
          limit,
          remaining: Math.max(limit - used, 0),
          resetMs: ttl > 0 ? ttl : WINDOW_SECONDS * 1000,
        }).headers,
      );
    }
    next();
  };
}
