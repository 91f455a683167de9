import { Redis } from 'ioredis';
import { COUNT_DEBIT } from '../../../src/billing/projections/usage/projection';
import { BatchWrites } from '../../../src/platform/projections/batch-writes';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';
import { commandsRun } from '../../support/redis-monitor';

// The usage projection's count-debit script, called through its declaration in a projection batch on
// the real Redis: what a request and its debit leave in the buckets, whatever the script does inside.
describe('usage count-debit script', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let n = 0;
  const key = (name: string) => `${prefix}${name}:${++n}`;
  beforeAll(() => (redis = new Redis(TEST_REDIS_URL)));
  afterAll(async () => {
    redis.disconnect();
    await cleanupPrefix(TEST_REDIS_URL, prefix);
  });

  type Call = { endpoint: string } & (
    | { kind: 'requested'; endpointName: string }
    | {
        kind: 'debited';
        owners: string;
        buckets: [string, string];
        keyId: string;
        inputTokens: string;
        outputTokens: string;
        cost: string;
        model: string;
      }
  );
  async function batch(calls: Call[]): Promise<void> {
    const b = new BatchWrites();
    for (const c of calls) {
      if (c.kind === 'requested') {
        COUNT_DEBIT.each(
          b,
          { endpoint: c.endpoint, owners: '', minute: '', hour: '' },
          {
            kind: 'requested',
            endpointName: c.endpointName,
            endpointTtl: '604800',
            keyId: '',
            inputTokens: '',
            outputTokens: '',
            cost: '',
            model: '',
          },
        );
      } else {
        const [minute, hour] = c.buckets;
        COUNT_DEBIT.each(
          b,
          { endpoint: c.endpoint, owners: c.owners, minute, hour },
          {
            kind: 'debited',
            endpointName: '',
            endpointTtl: '',
            keyId: c.keyId,
            inputTokens: c.inputTokens,
            outputTokens: c.outputTokens,
            cost: c.cost,
            model: c.model,
          },
        );
      }
    }
    const multi = redis.multi();
    b.flush(multi);
    const results = (await multi.exec())!;
    expect(results.filter(([err]) => err)).toEqual([]);
  }
  const groupsOf = (prefixes: string[], counts: { req: string; in: string; out: string; cost: string }) =>
    Object.fromEntries(prefixes.flatMap((p) => Object.entries(counts).map(([k, v]) => [`${p}:${k}`, v]))) as Record<string, string>;

  it('counts a debit into its minute and hour by key, model, member and endpoint (no totals: derived on read); the endpoint record is used up', async () => {
    const [endpoint, owners] = [key('endpoint'), key('owners')];
    const buckets: [string, string] = [key('minute'), key('hour')];
    await redis.hset(owners, 'k1', 'u1');
    await batch([
      { kind: 'requested', endpoint, endpointName: 'chat' },
      { kind: 'debited', endpoint, owners, buckets, keyId: 'k1', inputTokens: '10', outputTokens: '20', cost: '300', model: 'm1' },
    ]);
    const want = groupsOf(['k:k1', 'm:m1', 'u:u1', 'e:chat'], { req: '1', in: '10', out: '20', cost: '300' });
    for (const bucket of buckets) expect(await redis.hgetall(bucket)).toEqual(want);
    expect(await redis.exists(endpoint)).toBe(0);
  });

  it("keeps a request's endpoint across batches until its debit, which reads it then deletes it", async () => {
    const [endpoint, owners] = [key('endpoint'), key('owners')];
    const buckets: [string, string] = [key('minute'), key('hour')];
    await batch([{ kind: 'requested', endpoint, endpointName: 'openai' }]);
    expect(await redis.get(endpoint)).toBe('openai');
    expect(await redis.ttl(endpoint)).toBeGreaterThan(0);
    const ran = await commandsRun(prefix, () =>
      batch([{ kind: 'debited', endpoint, owners, buckets, keyId: 'k1', inputTokens: '1', outputTokens: '2', cost: '3', model: 'm1' }]),
    );
    // Read and deleted in one command: GETDEL, not a GET and a DEL.
    expect(ran.map((c) => c[0]).filter((c) => ['get', 'del', 'getdel'].includes(c))).toEqual(['getdel']);
    expect(await redis.hget(buckets[0], 'e:openai:req')).toBe('1');
    expect(await redis.exists(endpoint)).toBe(0);
  });

  it("counts a debit whose key creator and endpoint are unknown under 'unknown'", async () => {
    const buckets: [string, string] = [key('minute'), key('hour')];
    await batch([
      {
        kind: 'debited',
        endpoint: key('endpoint'),
        owners: key('owners'),
        buckets,
        keyId: 'k9',
        inputTokens: '1',
        outputTokens: '1',
        cost: '1',
        model: 'm',
      },
    ]);
    const got = await redis.hgetall(buckets[1]);
    expect(got['u:unknown:req']).toBe('1');
    expect(got['e:unknown:req']).toBe('1');
  });

  it('sums costs exactly past 2^53, in one batch and across batches', async () => {
    const [endpoint, owners] = [key('endpoint'), key('owners')];
    const buckets: [string, string] = [key('minute'), key('hour')];
    const big = (2n ** 53n - 1n).toString();
    const debit = {
      kind: 'debited' as const,
      endpoint,
      owners,
      buckets,
      keyId: 'k1',
      inputTokens: big,
      outputTokens: '1',
      cost: big,
      model: 'm1',
    };
    await batch([debit, debit]);
    await batch([{ ...debit, cost: '3', inputTokens: '3' }]);
    const total = (2n * (2n ** 53n - 1n) + 3n).toString();
    for (const bucket of buckets) {
      const got = await redis.hgetall(bucket);
      expect([got['k:k1:cost'], got['m:m1:cost'], got['k:k1:in'], got['k:k1:req']]).toEqual([total, total, total, '3']);
    }
  });
});
