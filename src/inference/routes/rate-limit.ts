import type { Response } from 'express';
import { HttpError } from '../../platform/http/middleware/errors';

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
 * The counter is rate-limiter-flexible's (RateLimiterRedis: the same key `{prefix}:{keyId}`, the same
 * script), written here so that the count runs inside the admission script (./admission.ts), in
 * the same round trip as the key lookup and the reservation.
 */

/** Counts one request in the key's window (locals `counter`, `window` in seconds) → locals `consumed`, `ttl` (ms left). */
export const COUNT_BODY = `
redis.call('SET', counter, 0, 'EX', window, 'NX')
local consumed = redis.call('INCRBY', counter, 1)
local ttl = redis.call('PTTL', counter)
if ttl == -1 then
  redis.call('EXPIRE', counter, window)
  ttl = 1000 * window
end`;

export const WINDOW_SECONDS = 60;

/** A request counted in its key's window: the count so far and the milliseconds left in the window. */
export interface Counted {
  count: number;
  msLeft: number;
}

export interface RateVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetMs: number;
}

export function rateVerdict(c: Counted, override: number | null, defaultPerMinute: number): RateVerdict {
  const limit = override && override > 0 ? override : defaultPerMinute;
  const allowed = c.count <= limit;
  return { allowed, limit, remaining: allowed ? Math.max(limit - c.count, 0) : 0, resetMs: c.msLeft };
}

/** Sets the rate-limit headers on the answer; throws the 429 when the request is over the limit. */
export function applyRateVerdict(res: Response, r: RateVerdict): void {
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
}
