import type { ChainableCommander } from 'ioredis';
import { RespArgs } from './resp-args';
import { luaScript, luaSource, providedInclude } from '../redis-scripts';

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

const HINCRBY_MANY = luaScript('platform/projections/hincrby-many.lua', { keys: [], args: [], rest: true }).text;

/**
 * `lua` (written for one call, with KEYS and ARGV) run once per call. ARGV holds the calls in order,
 * each one argument `numkeys NUL key… NUL arg…` (NUL-separated), or, for a call with a NUL in a key
 * or argument, '' then numkeys, numargs, keys…, args… (evalEach).
 *
 * The script may call `incr(key, field, delta)` instead of HINCRBY: increments are summed per hash
 * field over the whole batch and written when the EVAL ends (a per-debit script spent most of
 * Redis's time in 24 HINCRBYs per call). A script that adds many numbers per call can add them
 * itself, cheaper: `room(d1, d2, …)` (before each call's adds: true when every delta is an integer
 * below 1e15 in size) then `sums(key)` (that key's table field → running sum, to add to); a delta
 * that does not fit goes through incr(). A script must not read a field it increments: the sums
 * land at the end. `memo` is a table the script's calls share for the whole EVAL (usage keeps its
 * field names there: 20 new strings per debit were a large part of its cost); `atEnd(fn)` runs fn
 * once the last call has run (usage writes the endpoints of requests not debited in the batch).
 *
 * Sums are exact: every running sum stays below 1e15 in size (room() writes them all out first when
 * the sizes it was told of, added up since the last write, would reach that), so a double holds it;
 * incr() sends a delta that is not such a number to HINCRBY at once (Redis's int64 does the rest).
 * Written out with string.format('%d'): '%.0f' (glibc's floating-point printing) cost 3 times as
 * much per field. (One HMGET and one HSET per key instead of a HINCRBY per field was measured too:
 * no cheaper, the listpack lookups of each field dominate.)
 */
export function eachScript(lua: string): string {
  return RUNTIME_HEAD + lua + RUNTIME_TAIL;
}

const [RUNTIME_HEAD, RUNTIME_TAIL] = luaSource('platform/projections/batch-runtime.lua').split('--@body');

/** What a per-event script declares to use the runtime's helpers (`--@include batch-runtime`). */
export const BATCH_RUNTIME = providedInclude('batch-runtime');

const EXPIREAT_MANY = luaScript('platform/projections/expireat-many.lua', { keys: [], args: [], rest: true }).text;

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
