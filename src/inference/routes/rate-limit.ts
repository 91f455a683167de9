import type { Redis } from 'ioredis';
import type { RequestHandler, Response } from 'express';
import { defineScript, Script } from '../../platform/projections/scripts';
import { KEY_FIELDS as F, KEY_RECORD_INFIX, KeyIndex, keyRecordOf, KeyRecord } from '../../accounts';
import { HttpError } from '../../platform/http/middleware/errors';
import { apiKeyOf } from './auth';

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
 * script), written here so that the key lookup and the count can share one script and one round
 * trip (`lookupAndCount`): the count is what a request pays before generation on every call.
 */

/** Counts one request in the key's window (KEYS[1]: the counter; ARGV[1]: the window in seconds) → {count, ms left}. */
const COUNT_BODY = `
redis.call('SET', counter, 0, 'EX', window, 'NX')
local consumed = redis.call('INCRBY', counter, 1)
local ttl = redis.call('PTTL', counter)
if ttl == -1 then
  redis.call('EXPIRE', counter, window)
  ttl = 1000 * window
end`;

const COUNT = `
local counter, window = KEYS[1], ARGV[1]
${COUNT_BODY}
return {consumed, ttl}`;

/**
 * The key index's lookup (KEYS[1]: its active generation; ARGV[1]: the records' prefix, ARGV[2]: the
 * key hash) and, for a key the caller will let through on what the record says (no expiry to judge
 * against the caller's clock, and the scope ARGV[5]), the count in its window (ARGV[3]: the counters'
 * prefix, ARGV[4]: the window in seconds) → {fields} or {fields, count, ms left}.
 */
const LOOKUP_AND_COUNT = `
local gen = redis.call('GET', KEYS[1]) or '0'
local flat = redis.call('HGETALL', ARGV[1] .. gen .. '${KEY_RECORD_INFIX}' .. ARGV[2])
if #flat == 0 then return {flat} end
local h = {}
for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
if (h.${F.expiresAt} or '') ~= '' or not string.find(',' .. (h.${F.scopes} or '') .. ',', ',' .. ARGV[5] .. ',', 1, true) then
  return {flat}
end
local counter, window = ARGV[3] .. h.${F.keyId}, ARGV[4]
${COUNT_BODY}
return {flat, consumed, ttl}`;

const WINDOW_SECONDS = 60;

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

export class InferenceRateLimiter {
  private readonly countScript: Script;
  private readonly lookupAndCountScript: Script;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    private readonly defaultPerMinute: number,
  ) {
    this.countScript = defineScript(redis, 'tollgateRateCount', 1, COUNT);
    this.lookupAndCountScript = defineScript(redis, 'tollgateKeyLookupAndCount', 1, LOOKUP_AND_COUNT);
  }

  private verdict(c: Counted, override: number | null): RateVerdict {
    const limit = override && override > 0 ? override : this.defaultPerMinute;
    const allowed = c.count <= limit;
    return { allowed, limit, remaining: allowed ? Math.max(limit - c.count, 0) : 0, resetMs: c.msLeft };
  }

  async consume(keyId: string, override: number | null): Promise<RateVerdict> {
    const [count, msLeft] = (await this.countScript(`${this.keyPrefix}:${keyId}`, WINDOW_SECONDS)) as [number, number];
    return this.verdict({ count: Number(count), msLeft: Number(msLeft) }, override);
  }

  /**
   * The key's record by its hash and, when the record alone says the key will be let through (no
   * expiry, the scope), this request counted in its window: one round trip instead of two. A key
   * with an expiry is judged by the caller's clock first and counted afterwards (`middleware`).
   */
  async lookupAndCount(keys: KeyIndex, keyHash: string, scope: string): Promise<{ key: KeyRecord | null; counted?: Counted }> {
    const { activeKey, recordPrefix } = keys.location;
    const [flat, count, msLeft] = (await this.lookupAndCountScript(
      activeKey,
      recordPrefix,
      keyHash,
      `${this.keyPrefix}:`,
      WINDOW_SECONDS,
      scope,
    )) as [string[], number?, number?];
    const key = keyRecordOf(flat);
    return count === undefined ? { key } : { key, counted: { count: Number(count), msLeft: Number(msLeft) } };
  }

  middleware(): RequestHandler {
    return async (_req, res, next) => {
      const key = apiKeyOf(res);
      const counted = countedOf(res);
      let r: RateVerdict;
      try {
        r = counted ? this.verdict(counted, key.rateLimit) : await this.consume(key.keyId, key.rateLimit);
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

/** The count made together with the key lookup, if it was (res.locals.rateCounted). */
function countedOf(res: Response): Counted | undefined {
  return res.locals.rateCounted as Counted | undefined;
}
