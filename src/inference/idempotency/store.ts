import type { Redis } from 'ioredis';
import type { Keyspace } from '../../platform/projections/keyspace';
import { defineScript, Script } from '../../platform/projections/scripts';

/**
 * The replies of inference calls sent with an `Idempotency-Key`, kept in Redis (never in the event
 * store: the reply text is the caller's content, kept only for the replay window).
 *
 *   {prefix}idem:{keyId}:{idempotency key}   JSON, TTL = the window
 *     running: {s:"run", h, t, lease, exp, rid}   a call in progress; its process renews `lease`
 *     done:    {s:"done", h, exp, rid, reply}     the recorded answer, replayed to retries
 *
 * `h` is the hash of the request (route and body): the same key with another body is refused.
 * `exp` and `lease` are milliseconds of the service clock (so a test clock moves them); the TTL is
 * Redis's own clean-up. A running record whose lease ran out belongs to a process that died: the
 * next retry takes it over and runs the call anew.
 */

export interface RecordedReply {
  status: number;
  headers: Record<string, string>;
  /** The body as written, write by write (one entry per stream frame when streamed). */
  chunks: string[];
}

export type Claim =
  | { kind: 'claimed'; token: string; previousRequestId: string | null }
  | { kind: 'mismatch' }
  | { kind: 'running'; retryAfterSeconds: number }
  | { kind: 'done'; requestId: string; reply: RecordedReply };

const CLAIM = `
local v = redis.call('GET', KEYS[1])
local now = tonumber(ARGV[1])
local prev = ''
if v then
  local r = cjson.decode(v)
  if tonumber(r.exp) > now then
    if r.h ~= ARGV[2] then return {'mismatch'} end
    if r.s == 'done' then return {'done', v} end
    if tonumber(r.lease) > now then return {'running', tostring(math.ceil((tonumber(r.lease) - now) / 1000))} end
    prev = r.rid
  end
end
local rec = '{"s":"run","h":' .. cjson.encode(ARGV[2]) .. ',"t":' .. cjson.encode(ARGV[3]) ..
  ',"lease":' .. string.format('%.0f', now + tonumber(ARGV[4])) .. ',"exp":' .. string.format('%.0f', now + tonumber(ARGV[5])) ..
  ',"rid":' .. cjson.encode(ARGV[6]) .. '}'
redis.call('SET', KEYS[1], rec, 'PX', ARGV[5])
return {'claimed', prev}`;

/** Renews the lease (ARGV[3] set) or completes (ARGV[4] the done record) or releases (neither), only for the owner's token. */
const OWNER = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local r = cjson.decode(v)
if r.s ~= 'run' or r.t ~= ARGV[1] then return 0 end
if ARGV[2] == 'lease' then
  local rec = '{"s":"run","h":' .. cjson.encode(r.h) .. ',"t":' .. cjson.encode(r.t) .. ',"lease":' .. ARGV[3] ..
    ',"exp":' .. string.format('%.0f', r.exp) .. ',"rid":' .. cjson.encode(r.rid) .. '}'
  redis.call('SET', KEYS[1], rec, 'KEEPTTL')
elseif ARGV[2] == 'done' then
  -- The reply goes in as given (not through cjson, which would turn an empty list into {}).
  local d = '{"s":"done","h":' .. cjson.encode(r.h) .. ',"exp":' .. string.format('%.0f', r.exp) ..
    ',"rid":' .. cjson.encode(r.rid) .. ',"reply":' .. ARGV[3] .. '}'
  redis.call('SET', KEYS[1], d, 'KEEPTTL')
else
  redis.call('DEL', KEYS[1])
end
return 1`;

export class IdempotencyStore {
  private readonly claimScript: Script;
  private readonly ownerScript: Script;

  constructor(
    redis: Redis,
    private readonly ks: Keyspace,
    readonly windowMs: number,
    readonly leaseMs: number,
    private readonly nowMs: () => number,
    private readonly newToken: () => string,
  ) {
    this.claimScript = defineScript(redis, 'tollgateIdemClaim', 1, CLAIM);
    this.ownerScript = defineScript(redis, 'tollgateIdemOwner', 1, OWNER);
  }

  key(keyId: string, idempotencyKey: string): string {
    return `${this.ks.prefix}idem:${keyId}:${idempotencyKey}`;
  }

  async claim(key: string, requestHash: string, requestId: string): Promise<Claim> {
    const token = this.newToken();
    const [kind, value] = (await this.claimScript(key, this.nowMs(), requestHash, token, this.leaseMs, this.windowMs, requestId)) as [string, string?];
    if (kind === 'mismatch') return { kind };
    if (kind === 'running') return { kind, retryAfterSeconds: Math.max(1, Number(value)) };
    if (kind === 'done') {
      const r = JSON.parse(value ?? '{}') as { rid: string; reply: RecordedReply };
      return { kind, requestId: r.rid, reply: r.reply };
    }
    return { kind: 'claimed', token, previousRequestId: value ? value : null };
  }

  async renew(key: string, token: string): Promise<boolean> {
    return (await this.ownerScript(key, token, 'lease', this.nowMs() + this.leaseMs)) === 1;
  }

  async complete(key: string, token: string, reply: RecordedReply): Promise<boolean> {
    return (await this.ownerScript(key, token, 'done', JSON.stringify(reply))) === 1;
  }

  async release(key: string, token: string): Promise<boolean> {
    return (await this.ownerScript(key, token, 'release')) === 1;
  }
}
