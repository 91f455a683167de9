import type { ChainableCommander } from 'ioredis';
import { RespArgs } from './resp-args';

/**
 * The writes a projection leaves for the end of its batch (ProjectionTx.hincrby, expireAt,
 * evalEach). Queuing one ioredis command per event and per field cost more than everything else
 * the projector does (bench:projector: about 45 commands per TokensDebited, 35% of the time in
 * the garbage collector); here a batch of events becomes a few scripts with many arguments:
 *   - increments of one hash field are summed (exactly, as bigint) and sent in one script;
 *   - each per-event script runs once per call, in call order, all calls in one EVAL;
 *   - EXPIREATs come last (after the keys they expire exist), the last time given per key.
 * They are queued on the same MULTI as the checkpoint, so exactly-once is unchanged.
 */

// ARGV: key, number of fields, then field and delta pairs; repeated per key.
const HINCRBY_MANY = `
local i, n = 1, #ARGV
while i <= n do
  local key, count = ARGV[i], tonumber(ARGV[i + 1])
  i = i + 2
  for _ = 1, count do
    redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1])
    i = i + 2
  end
end
return 1`;

/**
 * `lua` (written for one call, with KEYS and ARGV) run once per call. ARGV holds the calls in order,
 * each one argument `numkeys NUL key… NUL arg…` (NUL-separated), or, for a call with a NUL in a key
 * or argument, '' then numkeys, numargs, keys…, args… (evalEach).
 *
 * The script may call `incr(key, field, delta)` instead of HINCRBY: increments are summed per hash
 * field over the whole batch and sent as one HINCRBY each when the EVAL ends (a per-debit script
 * spent most of Redis's time in 24 HINCRBYs per call). Sums are exact: a delta or a running sum
 * that a double might not hold (15 digits or more) goes to HINCRBY at once; Redis's int64 does the
 * rest. A script must not read a field it increments through incr(): that lands at the end.
 */
export function eachScript(lua: string): string {
  return `local acc, order = {}, {}
local function incr(key, field, delta)
  local d = tonumber(delta)
  if d == nil or d ~= math.floor(d) or d >= 1e15 or d <= -1e15 then
    redis.call('HINCRBY', key, field, delta)
    return
  end
  local fields = acc[key]
  if not fields then
    fields = {}
    acc[key] = fields
    order[#order + 1] = key
  end
  local s = (fields[field] or 0) + d
  if s >= 1e15 or s <= -1e15 then
    redis.call('HINCRBY', key, field, string.format('%.0f', s))
    s = 0
  end
  fields[field] = s
end
local function one(KEYS, ARGV)
${lua}
end
local find, sub = string.find, string.sub
local i, n = 1, #ARGV
while i <= n do
  local c = ARGV[i]
  if c ~= '' then
    -- One call packed in one argument: numkeys NUL keys… NUL args…, NUL-separated.
    local parts, pos, z = {}, 1, find(c, '\0', 1, true)
    while z do
      parts[#parts + 1] = sub(c, pos, z - 1)
      pos = z + 1
      z = find(c, '\0', pos, true)
    end
    parts[#parts + 1] = sub(c, pos)
    local nk = tonumber(parts[1])
    local k, a = {}, {}
    for j = 1, nk do k[j] = parts[1 + j] end
    for j = nk + 2, #parts do a[#a + 1] = parts[j] end
    one(k, a)
    i = i + 1
  else
    -- A call with a NUL in a key or argument: '', numkeys, numargs, keys…, args….
    local nk, na = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    local k, a = {}, {}
    for j = 1, nk do k[j] = ARGV[i + 2 + j] end
    for j = 1, na do a[j] = ARGV[i + 2 + nk + j] end
    one(k, a)
    i = i + 3 + nk + na
  end
end
for _, key in ipairs(order) do
  for field, s in pairs(acc[key]) do
    if s == 0 then s = 0 end -- never "-0"
    redis.call('HINCRBY', key, field, string.format('%.0f', s))
  end
end
return 1`;
}

// ARGV: key, unix seconds; repeated.
const EXPIREAT_MANY = `
for i = 1, #ARGV, 2 do
  redis.call('EXPIREAT', ARGV[i], ARGV[i + 1])
end
return 1`;

const wrapped = new Map<string, string>();

export class BatchWrites {
  /** Sums stay numbers while they are safe integers (token counts), bigint beyond (nano-USD). */
  private readonly incr = new Map<string, Map<string, number | bigint>>();
  private readonly expire = new Map<string, number>();
  /** Each script's calls, already in RESP bytes (./resp-args.ts). */
  private readonly scripts = new Map<string, RespArgs>();

  hincrby(key: string, field: string, delta: string | number | bigint): void {
    let fields = this.incr.get(key);
    if (!fields) this.incr.set(key, (fields = new Map()));
    const cur = fields.get(field) ?? 0;
    // Money comes as bigint or a decimal string; most amounts are far below 2^53, and a number sum
    // allocates nothing where a bigint sum allocates at every step.
    const d = typeof delta === 'number' ? delta : asSafeNumber(delta);
    if (d !== null && typeof cur === 'number') {
      const sum = cur + d;
      if (Number.isSafeInteger(sum)) return void fields.set(field, sum);
    }
    fields.set(field, BigInt(cur) + BigInt(delta));
  }

  expireAt(key: string, unixSeconds: number): void {
    this.expire.delete(key);
    this.expire.set(key, unixSeconds);
  }

  evalEach(lua: string, keys: readonly string[], args: readonly string[]): void {
    let calls = this.scripts.get(lua);
    if (!calls) this.scripts.set(lua, (calls = new RespArgs()));
    // Packed: one RESP argument per call instead of one per key and value, written as bytes at
    // once (./resp-args.ts): ioredis's encoding of a batch's arguments (flattening, a string piece
    // and a byte count each) and the strings kept alive until the batch commits were most of the
    // projector's remaining cost.
    if (hasNul(keys, args)) {
      calls.add('');
      calls.add(String(keys.length));
      calls.add(String(args.length));
      for (const k of keys) calls.add(k);
      for (const a of args) calls.add(a);
      return;
    }
    calls.addJoined(String(keys.length), keys, args);
  }

  /** Queues everything on `multi` (increments, each script, then expiries) and forgets it. */
  flush(multi: ChainableCommander): void {
    if (this.incr.size > 0) {
      const args = new RespArgs();
      for (const [key, fields] of this.incr) {
        args.add(key);
        args.add(String(fields.size));
        for (const [field, delta] of fields) {
          args.add(field);
          args.add(delta.toString());
        }
      }
      // EVAL, not EVALSHA: inside MULTI a NOSCRIPT (script cache flushed) would fail only this command.
      args.queue(multi, 'eval', [HINCRBY_MANY, '0']);
    }
    for (const [lua, calls] of this.scripts) {
      let script = wrapped.get(lua);
      if (!script) wrapped.set(lua, (script = eachScript(lua)));
      calls.queue(multi, 'eval', [script, '0']);
    }
    // Last: an EXPIREAT on a key that a script creates (usage's buckets) would find no key before it.
    // One EVAL for all of them: an EXPIREAT command each (thousands per catch-up batch) cost an
    // ioredis Command, a promise and a QUEUED reply apiece.
    if (this.expire.size > 0) {
      const args = new RespArgs();
      for (const [key, at] of this.expire) {
        args.add(key);
        args.add(String(at));
      }
      args.queue(multi, 'eval', [EXPIREAT_MANY, '0']);
    }
    this.incr.clear();
    this.expire.clear();
    this.scripts.clear();
  }
}

function hasNul(keys: readonly string[], args: readonly string[]): boolean {
  for (const k of keys) if (k.includes('\0')) return true;
  for (const a of args) if (a.includes('\0')) return true;
  return false;
}

/** The delta as a number when that is exact (a safe integer), else null (the bigint path). */
function asSafeNumber(delta: string | bigint): number | null {
  if (typeof delta === 'bigint') return delta >= -MAX_SAFE && delta <= MAX_SAFE ? Number(delta) : null;
  // A plain decimal integer of at most 15 digits: no sign other than '-', no spaces, exponents or '+'.
  if (delta.length === 0 || delta.length > 16 || !/^-?\d{1,15}$/.test(delta)) return null;
  return Number(delta);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
