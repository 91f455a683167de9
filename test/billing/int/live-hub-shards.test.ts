import { LiveUsageHub } from '../../../src/billing/projections/usage/live-hub';
import { liveChannel } from '../../../src/billing/projections/usage/projection';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { uniquePrefix } from '../../support/redis';
import { REDIS_TARGETS } from '../../support/redis-targets';
import { until } from '../../support/wait';

/**
 * The live usage channels are shard channels (SSUBSCRIBE/SPUBLISH), one per workspace under its
 * hash tag: on one Redis and on a real 3-node Redis Cluster, where each workspace's channel is
 * served by the node of its slot (ioredis's shardedSubscribers), a listener gets its workspace's
 * messages and no other's, and a session's end reaches every workspace it names.
 */
describe.each(REDIS_TARGETS)('on $name', (target) => {
  const prefix = uniquePrefix('live');
  const ks = new Keyspace(prefix);
  const pub = target.connect();
  const sub = target.connect();
  const channelOf = (ws: string) => liveChannel((...p) => ks.shared(...p), ws);
  const hub = new LiveUsageHub(async () => sub, channelOf, pub);

  afterAll(async () => {
    pub.disconnect();
    sub.disconnect();
    await target.cleanup(prefix);
  });

  test("a workspace's listener gets its channel's messages, in order, and no other workspace's", async () => {
    // Workspaces enough that, on the cluster, their channels are on more than one node.
    const wss = Array.from({ length: 6 }, (_, i) => `w${i}`);
    const got = new Map<string, string[]>(wss.map((w) => [w, []]));
    const stops = await Promise.all(wss.map((w) => hub.listen(w, (m) => got.get(w)!.push(m))));
    for (const w of wss) for (const i of [1, 2, 3]) await pub.spublish(channelOf(w), `${w}-${i}`);
    await until(() => wss.every((w) => got.get(w)!.length === 3));
    for (const w of wss) expect(got.get(w)).toEqual([`${w}-1`, `${w}-2`, `${w}-3`]);
    await hub.endSession(wss, 'u1', 'sess');
    await until(() => wss.every((w) => got.get(w)!.length === 4));
    expect(JSON.parse(got.get('w0')![3])).toMatchObject({ accessEnded: { userId: 'u1', reason: 'logged_out' } });
    for (const stop of stops) stop();
  });
});
