import { verifyLedger } from '../../../src/cli/ledger/verify';
import type { TestServer } from '../../support/harness';
import { authHeaders, seedFundedKey, settle } from '../../inference/int/support/seed';
import { startInferenceServer } from '../../inference/int/support/server';

// With PROJECTION_PARTITIONS > 1 each partition's runner moves a checkpoint of its own and the
// whole-stream one is never written: verify compared every workspace at position 0 and reported
// each one as different. It now compares each workspace at its partition's checkpoint.
describe('ledger verify over partitioned projections', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startInferenceServer({ PROJECTION_PARTITIONS: '3' });
  });
  afterAll(() => server.close());

  test('every workspace compares at its own partition: 0 differences, and a drift is still found', async () => {
    const s = server.services;
    const keys = [];
    for (let i = 0; i < 4; i++) keys.push(await seedFundedKey(s, { usd: '1' }));
    for (const key of keys) {
      const res = await fetch(`${server.url}/external/api/inference`, {
        method: 'POST',
        headers: authHeaders(key.secret),
        body: JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 3 }),
      });
      expect(res.status).toBe(200);
    }
    await settle(s);

    const v = await verifyLedger(s.store, s.redis, s.ks, 3);
    expect(v.differences).toEqual([]);
    expect(v.negative).toEqual([]);
    expect(v.workspaces).toBeGreaterThanOrEqual(keys.length);
    // Read as one partition (the old behaviour), every workspace looks different: the test can fail.
    expect((await verifyLedger(s.store, s.redis, s.ks, 1)).differences.length).toBeGreaterThan(0);

    const ws = keys[0]!.workspaceId;
    const k = (await s.readModels.keys('balances')).ws(ws);
    await s.redis.hincrby(k, 'balance', 1);
    try {
      const drifted = await verifyLedger(s.store, s.redis, s.ks, 3);
      expect(drifted.differences).toEqual([expect.objectContaining({ workspaceId: ws, projection: 'balances', field: 'balance' })]);
    } finally {
      await s.redis.hincrby(k, 'balance', -1);
    }
  });
});
