import { Redis } from 'ioredis';
import { BatchWrites } from '../../../src/platform/projections/batch-writes';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

// The batched writes of a projection's batch (tx.hincrby, expireAt, evalEach) against the real Redis.
describe('BatchWrites', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  beforeAll(() => (redis = new Redis(TEST_REDIS_URL)));
  afterAll(async () => {
    redis.disconnect();
    await cleanupPrefix(TEST_REDIS_URL, prefix);
  });

  it('sums increments exactly beyond 2^53, runs each script once per call in order, sets expiries after both', async () => {
    const b = new BatchWrites();
    const h = `${prefix}h`;
    const big = 2n ** 60n + 7n;
    b.hincrby(h, 'a', big.toString());
    b.hincrby(h, 'a', 1);
    b.hincrby(h, 'a', -3n);
    b.hincrby(h, 'zero', '0');
    b.expireAt(h, 4_000_000_000);
    const list = `${prefix}l`;
    const push = "redis.call('RPUSH', KEYS[1], ARGV[1] .. ':' .. redis.call('LLEN', KEYS[1]))";
    for (const v of ['x', 'y', 'z']) b.evalEach(push, [list], [v]);
    // A key that only a script creates still gets its expiry (the last one given).
    const made = `${prefix}made`;
    b.expireAt(made, 4_000_000_100);
    b.evalEach("redis.call('SET', KEYS[1], ARGV[1])", [made], ['v']);
    b.expireAt(made, 4_000_000_200);
    const multi = redis.multi();
    b.flush(multi);
    const results = await multi.exec();
    expect(results!.filter(([err]) => err)).toEqual([]);
    expect(await redis.hgetall(h)).toEqual({ a: (big - 2n).toString(), zero: '0' });
    expect(await redis.expiretime(h)).toBe(4_000_000_000);
    expect(await redis.lrange(list, 0, -1)).toEqual(['x:0', 'y:1', 'z:2']);
    expect(await redis.expiretime(made)).toBe(4_000_000_200);
    // Flushed: a second flush queues nothing.
    const again = redis.multi();
    b.flush(again);
    expect(await again.exec()).toEqual([]);
  });

  it('sums small bigint and decimal-string deltas as numbers while exact, and as bigint once past 2^53', async () => {
    const b = new BatchWrites();
    const h = `${prefix}small`;
    const near = 2n ** 52n + 1n; // each fits a double; three of them do not
    for (let i = 0; i < 3; i++) b.hincrby(h, 'big', near);
    for (let i = 0; i < 3; i++) b.hincrby(h, 'str', near.toString());
    b.hincrby(h, 'mixed', '-007');
    b.hincrby(h, 'mixed', 10n);
    b.hincrby(h, 'mixed', 1);
    b.hincrby(h, 'long', '1234567890123456789'); // 19 digits: never a number
    b.hincrby(h, 'long', '-1');
    b.hincrby(h, 'neg', '-0');
    const multi = redis.multi();
    b.flush(multi);
    expect((await multi.exec())!.filter(([err]) => err)).toEqual([]);
    expect(await redis.hgetall(h)).toEqual({
      big: (3n * near).toString(),
      str: (3n * near).toString(),
      mixed: '4',
      long: '1234567890123456788',
      neg: '0',
    });
  });

  // A call travels packed in one argument (NUL-separated), or unpacked when a value holds a NUL.
  it('hands each call exactly its keys and arguments: empty, non-ASCII, NUL-holding, no keys, in call order', async () => {
    const b = new BatchWrites();
    const list = `${prefix}calls`;
    const echo = `local out = {tostring(#KEYS), tostring(#ARGV)}
for _, k in ipairs(KEYS) do out[#out + 1] = k end
for _, a in ipairs(ARGV) do out[#out + 1] = a end
redis.call('RPUSH', KEYS[1] or ARGV[1], cjson.encode(out))`;
    const calls: Array<[string[], string[]]> = [
      [[list], ['a', '', 'é€😀', '']],
      [[list, 'k\0x'], ['b']],
      [[], [list, 'c\0d', '']],
      [[], [list]],
      [[list], []],
      [[list], ['\0']],
    ];
    for (const [keys, args] of calls) b.evalEach(echo, keys, args);
    const multi = redis.multi();
    b.flush(multi);
    expect((await multi.exec())!.filter(([err]) => err)).toEqual([]);
    const got = (await redis.lrange(list, 0, -1)).map((s) => JSON.parse(s) as string[]);
    expect(got).toEqual(calls.map(([keys, args]) => [String(keys.length), String(args.length), ...keys, ...args]));
  });

  it("sums a script's incr() calls per field over the batch, exactly near and beyond 2^53", async () => {
    const b = new BatchWrites();
    const h = `${prefix}incr`;
    const count = 'incr(KEYS[1], ARGV[1], ARGV[2])';
    // Below 2^53 each, but their sum is not: the double would round it.
    const near = 2n ** 52n + 1n;
    const beyond = 2n ** 62n + 3n;
    const calls: Array<[string, bigint]> = [
      ['small', 5n],
      ['small', -2n],
      ['near', near],
      ['near', near],
      ['near', 1n],
      ['big', beyond],
      ['big', -1n],
      ['zero', 0n],
    ];
    for (const [field, delta] of calls) b.evalEach(count, [h], [field, delta.toString()]);
    await redis.hset(h, 'near', '1');
    const multi = redis.multi();
    b.flush(multi);
    const results = await multi.exec();
    expect(results!.filter(([err]) => err)).toEqual([]);
    expect(await redis.hgetall(h)).toEqual({ small: '3', near: (2n * near + 2n).toString(), big: (beyond - 1n).toString(), zero: '0' });
  });

  // room()/sums(): a script adding its own numbers. Each delta below 1e15 fits a double, but their sum
  // does not: room() must write the sums out before a running sum could round.
  it('keeps room()/sums() additions exact past 2^53, and refuses what a double might not hold', async () => {
    const b = new BatchWrites();
    const h = `${prefix}room`;
    const add = `local d = tonumber(ARGV[2])
if room(d) then
  local s = sums(KEYS[1])
  s[ARGV[1]] = (s[ARGV[1]] or 0) + d
else
  incr(KEYS[1], ARGV[1], ARGV[2])
end`;
    const near = 999_999_999_999_999n; // the largest that room() takes
    const calls: Array<[string, bigint]> = [];
    for (let i = 0; i < 12; i++) calls.push(['big', near - BigInt(i)], ['small', 1n]);
    calls.push(['huge', 10n ** 15n], ['huge', 2n ** 62n], ['frac', 1n], ['neg', -near], ['neg', -near]);
    for (const [field, delta] of calls) b.evalEach(add, [h], [field, delta.toString()]);
    await redis.hset(h, 'big', '123456789012345');
    const multi = redis.multi();
    b.flush(multi);
    expect((await multi.exec())!.filter(([err]) => err)).toEqual([]);
    const want = (field: string, base = 0n) =>
      calls
        .filter(([f]) => f === field)
        .reduce((s, [, d]) => s + d, base)
        .toString();
    expect(await redis.hgetall(h)).toEqual({
      big: want('big', 123456789012345n),
      small: '12',
      huge: want('huge'),
      frac: '1',
      neg: want('neg'),
    });
    // Not an integer: to HINCRBY as written, which refuses it (as it did before room()).
    b.evalEach(add, [h], ['frac', '1.5']);
    const bad = redis.multi();
    b.flush(bad);
    expect((await bad.exec())!.map(([err]) => String(err))).toEqual([expect.stringMatching(/not an integer/)]);
  });
});
