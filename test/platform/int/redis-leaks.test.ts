/**
 * The end-of-run check (test/support/global-teardown.js) finds the keys a test left behind under
 * the run's prefix, in any db of the test Redis and on every node of the test cluster, and names
 * the test prefix they are under. Checked here under a run prefix of this test's own.
 */
import { Cluster, Redis } from 'ioredis';
import { findLeaks, describeLeaks } from '../../support/redis-leaks';
import { TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

const NODES = (process.env.TEST_REDIS_CLUSTER_NODES ?? '').split(',').filter(Boolean);

test('keys left under a test prefix are found in every db and on the cluster, named by their prefix, and removed on request', async () => {
  const run = uniquePrefix('leakcheck');
  const other = uniquePrefix('not-this-run');
  const redis = new Redis(TEST_REDIS_URL);
  const db = Number(new URL(TEST_REDIS_URL).pathname.slice(1) || 0);
  const elsewhere = db === 15 ? 14 : 15;
  const cluster = new Cluster(NODES.map((n) => ({ host: n.split(':')[0], port: Number(n.split(':')[1]) })));
  try {
    await redis.set(`${run}a:1111:ws:w1:balance`, '1');
    await redis.set(`${run}a:1111:ws:w2:balance`, '1');
    await redis.set(`${other}a:1111:x`, '1');
    // A test that lost its db index writes elsewhere: looked at too.
    await redis.select(elsewhere);
    await redis.set(`${run}b:2222:k`, '1');
    await redis.select(db);
    for (let i = 0; i < 5; i++) await cluster.set(`${run}c:3333:k${i}`, '1');

    const leaks = await findLeaks(run, TEST_REDIS_URL, NODES);
    const byPrefix = new Map<string, number>();
    for (const l of leaks) byPrefix.set(l.prefix, (byPrefix.get(l.prefix) ?? 0) + l.keys);
    expect(Object.fromEntries(byPrefix)).toEqual({ [`${run}a:1111:`]: 2, [`${run}b:2222:`]: 1, [`${run}c:3333:`]: 5 });
    expect(leaks.find((l) => l.prefix === `${run}b:2222:`)!.where).toMatch(new RegExp(`^db ${elsewhere} of redis://`));
    expect(leaks.filter((l) => l.prefix === `${run}c:3333:`).every((l) => l.where.startsWith('cluster node 127.0.0.1:'))).toBe(true);
    const text = describeLeaks(leaks);
    expect(text.split('\n')[0]).toMatch(/^this test run left 8 Redis keys behind under \d test prefixes/);
    expect(text).toContain(`${run}a:1111: in db ${db} of redis://`);
    expect(text).not.toContain(other);

    await findLeaks(run, TEST_REDIS_URL, NODES, true);
    expect(await findLeaks(run, TEST_REDIS_URL, NODES)).toEqual([]);
  } finally {
    await redis.del(`${run}a:1111:ws:w1:balance`, `${run}a:1111:ws:w2:balance`, `${other}a:1111:x`);
    await redis.select(elsewhere);
    await redis.del(`${run}b:2222:k`);
    for (let i = 0; i < 5; i++) await cluster.del(`${run}c:3333:k${i}`);
    redis.disconnect();
    cluster.disconnect();
  }
});

test('a run prefix too short to be one run is refused', async () => {
  await expect(findLeaks('', TEST_REDIS_URL)).rejects.toThrow(/refusing/);
});
