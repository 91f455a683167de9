import { Redis } from 'ioredis';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { Expected, FencedOut, GenerationSwitched, guardBatch, guardedOutcome } from '../../../src/platform/projections/switch-over';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

/**
 * A batch's guard (switch-over.ts guardBatch): WATCH, a check script and the MULTI in one pipeline.
 * What the WATCH alone would miss is a change made BEFORE it (a new owner took the partition, or
 * another runner moved the checkpoint, while this one was paused): the script must refuse those,
 * and its refusal must keep the MULTI from committing.
 */
let prefix: string;
let ks: Keyspace;
let redis: Redis;
beforeEach(() => {
  prefix = uniquePrefix('guard');
  ks = new Keyspace(prefix);
  redis = new Redis(TEST_REDIS_URL);
});
afterEach(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
});

const expected: Expected = [
  { name: 'a', gen: '0', checkpoint: 10n },
  { name: 'b', gen: '2', checkpoint: 7n },
];
const fence = (token: string | null) => ({ key: `${prefix}fence`, token: () => token });

async function seed(over: Partial<{ fence: string; cpA: string; activeB: string }> = {}) {
  await redis.set(`${prefix}fence`, over.fence ?? '3-me');
  await redis.set(ks.checkpoint('a', '0'), over.cpA ?? '10');
  await redis.set(ks.active('b'), over.activeB ?? '2');
  await redis.set(ks.checkpoint('b', '2'), '7');
}

/** Guards a batch that writes `out`, sends it, and returns what guardedOutcome made of it. */
async function commit(token: string | null): Promise<unknown[]> {
  const p = redis.pipeline();
  const t = guardBatch(p, ks, expected, fence(token));
  if (t === null) throw new FencedOut('no token');
  p.set(`${prefix}out`, 'written');
  p.exec();
  return guardedOutcome((await p.exec()) as Array<[Error | null, unknown]>, t);
}

it('commits when the fence and every pointer and checkpoint are as expected', async () => {
  await seed();
  expect(await commit('3-me')).toEqual(['OK']);
  expect(await redis.get(`${prefix}out`)).toBe('written');
  expect(await redis.exists(ks.commitGuard)).toBe(0);
});

it("refuses a stale owner's batch: the fence moved before the WATCH", async () => {
  await seed({ fence: '4-other' });
  await expect(commit('3-me')).rejects.toBeInstanceOf(FencedOut);
  expect(await redis.get(`${prefix}out`)).toBeNull();
  expect(await redis.exists(ks.commitGuard)).toBe(0);
});

it('refuses a batch built on a checkpoint that moved, or a generation that switched, before the WATCH', async () => {
  await seed({ cpA: '12' });
  await expect(commit('3-me')).rejects.toBeInstanceOf(GenerationSwitched);
  expect(await redis.get(`${prefix}out`)).toBeNull();
  await seed({ activeB: '3' });
  await expect(commit('3-me')).rejects.toBeInstanceOf(GenerationSwitched);
  expect(await redis.get(`${prefix}out`)).toBeNull();
});

it('reads a key of the wrong type as a difference, not as a script error that would leave the EXEC unguarded', async () => {
  await seed();
  await redis.del(ks.checkpoint('a', '0'));
  await redis.hset(ks.checkpoint('a', '0'), 'x', '1');
  await expect(commit('3-me')).rejects.toBeInstanceOf(GenerationSwitched);
  expect(await redis.get(`${prefix}out`)).toBeNull();
});

it('queues nothing for a runner that holds no token', () => {
  const p = redis.pipeline();
  expect(guardBatch(p, ks, expected, fence(null))).toBeNull();
  expect(p.length).toBe(0);
});
