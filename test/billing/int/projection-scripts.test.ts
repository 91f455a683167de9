import { Redis } from 'ioredis';
import { MEMBER_SPEND } from '../../../src/billing/projections/balances/projection';
import { FAIL, SETTLE } from '../../../src/billing/projections/billing-settings/projection';
import { ENTRY } from '../../../src/billing/projections/ledger/projection';
import { BatchWrites } from '../../../src/platform/projections/batch-writes';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

// The billing projections' Lua scripts, each called through its declaration on the real Redis.
describe('billing projection scripts', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let n = 0;
  const key = (name: string) => `${prefix}${name}:${++n}`;
  beforeAll(() => (redis = new Redis(TEST_REDIS_URL)));
  afterAll(async () => {
    redis.disconnect();
    await cleanupPrefix(TEST_REDIS_URL, prefix);
  });

  describe('ledger append', () => {
    // A credit is a grant (op 'grant', a draw-order key naming it), a debit is op 'debit' with the amount debited.
    let grants = 0;
    const append = (balance: string, entries: string, amount: bigint) =>
      ENTRY.eval(
        redis,
        {},
        {
          op: amount >= 0n ? 'grant' : 'debit',
          book: `${balance}:book`,
          order: `${balance}:order`,
          balance,
          entries,
          key: `050|9999999999999|${String(++grants).padStart(20, '0')}|g${grants}`,
          amount: (amount >= 0n ? amount : -amount).toString(),
          atMs: '1764000000000',
          head: '{"balance":"',
          tail: '"}',
        },
      );
    const entryOf = (e: string) => JSON.parse(e.replace(/,"drawn":\[.*\]/, '')) as { balance: string };

    it('starts a missing balance at 0 and splices the running balance into each entry, negative included', async () => {
      const [balance, entries] = [key('balance'), key('entries')];
      expect(await append(balance, entries, 500n)).toBe(1);
      expect(await append(balance, entries, -700n)).toBe(2);
      expect(await redis.lrange(entries, 0, -1)).toEqual([
        '{"balance":"500"}',
        `{"balance":"-200","drawn":[{"grantId":"g${grants - 1}","amountNanoUsd":"500"}]}`,
      ]);
      expect(await redis.get(balance)).toBe('-200');
    });

    it('writes exact balances on both sides of 2^53 and far beyond it', async () => {
      const [balance, entries] = [key('balance'), key('entries')];
      await redis.set(balance, (2n ** 53n - 2n).toString());
      await append(balance, entries, 1n);
      await append(balance, entries, 1n);
      await append(balance, entries, 1n);
      await append(balance, entries, 2n ** 62n);
      await append(balance, entries, -(2n ** 62n) - 2n ** 54n);
      const got = (await redis.lrange(entries, 0, -1)).map((e) => entryOf(e).balance);
      expect(got).toEqual([
        (2n ** 53n - 1n).toString(),
        (2n ** 53n).toString(),
        (2n ** 53n + 1n).toString(),
        (2n ** 62n + 2n ** 53n + 1n).toString(),
        (-(2n ** 53n) + 1n).toString(),
      ]);
    });
  });

  describe('member spend (in a projection batch)', () => {
    const periods = { daily: '2030-01-15', weekly: '2030-W03', monthly: '2030-01' };
    async function run(calls: Array<{ keyOwner: string; memberSpendPrefix: string; amount: string }>): Promise<unknown[]> {
      const b = new BatchWrites();
      for (const c of calls) MEMBER_SPEND.each(b, {}, { ...c, ...periods });
      const multi = redis.multi();
      b.flush(multi);
      const results = (await multi.exec())!;
      expect(results.filter(([err]) => err)).toEqual([]);
      return results.map(([, r]) => r);
    }

    it("adds each debit to its key creator's spend in every period, summed exactly past 2^53", async () => {
      const [owner, spend] = [key('key-owner'), key('member-spend') + ':'];
      await redis.set(owner, 'u1');
      const big = (2n ** 53n - 1n).toString();
      await run([
        { keyOwner: owner, memberSpendPrefix: spend, amount: big },
        { keyOwner: owner, memberSpendPrefix: spend, amount: big },
        { keyOwner: owner, memberSpendPrefix: spend, amount: '3' },
      ]);
      const total = (2n * (2n ** 53n - 1n) + 3n).toString();
      expect(await redis.hgetall(spend + 'u1')).toEqual({ '2030-01-15': total, '2030-W03': total, '2030-01': total });
    });

    it('counts nothing for a key whose creator is unknown (no key-owner record)', async () => {
      const spend = key('member-spend') + ':';
      await run([{ keyOwner: key('key-owner'), memberSpendPrefix: spend, amount: '1000' }]);
      expect(await redis.keys(`${spend}*`)).toEqual([]);
    });
  });

  describe('reload failed', () => {
    it("takes a failed reload's amount off the month it was triggered in and answers that month", async () => {
      const [months, reloads] = [key('months'), key('reloads')];
      await redis.hset(reloads, 'r1', '2030-01');
      await redis.hset(months, '2030-01', (2n ** 53n + 5n).toString(), '2030-02', '7');
      expect(await FAIL.eval(redis, { months, reloads }, { reloadId: 'r1', amount: (2n ** 53n + 1n).toString() })).toBe('2030-01');
      expect(await redis.hgetall(months)).toEqual({ '2030-01': '4', '2030-02': '7' });
    });

    it('changes nothing for an unknown reload', async () => {
      const [months, reloads] = [key('months'), key('reloads')];
      await redis.hset(months, '2030-01', '100');
      expect(await FAIL.eval(redis, { months, reloads }, { reloadId: 'nope', amount: '100' })).toBeNull();
      expect(await redis.hgetall(months)).toEqual({ '2030-01': '100' });
      expect(await redis.exists(reloads)).toBe(0);
    });
  });

  describe('reload settle', () => {
    it("clears the in-flight marker and the workspace's in-flight entry when the outcome is this reload's", async () => {
      const [settings, inflight] = [key('settings'), key('inflight')];
      await redis.hset(settings, 'inFlight', 'r2', 'inFlightSince', '123', 'threshold', '5');
      await redis.sadd(inflight, 'ws1', 'ws2');
      await SETTLE.eval(redis, { settings, inflight }, { reloadId: 'r2', wsId: 'ws1' });
      expect(await redis.hgetall(settings)).toEqual({ threshold: '5' });
      expect(await redis.smembers(inflight)).toEqual(['ws2']);
    });

    it("changes nothing for an older reload's outcome, nor for missing settings", async () => {
      const [settings, inflight] = [key('settings'), key('inflight')];
      await redis.hset(settings, 'inFlight', 'r3', 'inFlightSince', '123');
      await redis.sadd(inflight, 'ws1');
      await SETTLE.eval(redis, { settings, inflight }, { reloadId: 'r2', wsId: 'ws1' });
      expect(await redis.hgetall(settings)).toEqual({ inFlight: 'r3', inFlightSince: '123' });
      expect(await redis.smembers(inflight)).toEqual(['ws1']);
      const missing = key('settings');
      await SETTLE.eval(redis, { settings: missing, inflight }, { reloadId: 'r3', wsId: 'ws1' });
      expect(await redis.exists(missing)).toBe(0);
      expect(await redis.smembers(inflight)).toEqual(['ws1']);
    });
  });
});
