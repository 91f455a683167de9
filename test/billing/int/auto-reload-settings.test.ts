import { autoReloadSettings, getBillingSettings } from '../../../src/billing/projections/billing-settings/queries';
import { ReadModels } from '../../../src/platform/projections/read-models';
import { projectionEnv, ProjectionEnv } from '../../support/fixtures/env';
import { commandsRun } from '../../support/redis-monitor';

let env: ProjectionEnv;
beforeEach(() => {
  env = projectionEnv();
});
afterEach(async () => {
  await env.dispose();
});

// The auto-reload reactor reads this for every debit: a workspace that never configured auto-reload
// (its rule cannot fire) costs the one field's read, not the settings hash and the month's reloads.
describe('autoReloadSettings', () => {
  const settingsKey = (ws: string) => env.ks.rm('billing-settings', '0', 'ws', ws);

  test('a workspace without auto-reload: null, from one HGET inside the read script', async () => {
    const rm = new ReadModels(env.redis, env.ks);
    await env.redis.hset(settingsKey('plain'), { pm: 'pm_1', brand: 'visa', last4: '4242', rev: '3' });
    expect(await autoReloadSettings(rm, 'plain', '2026-11')).toBeNull(); // the script loaded
    const ran = await commandsRun(env.ks.prefix, async () => expect(await autoReloadSettings(rm, 'plain', '2026-11')).toBeNull());
    expect(ran.map((c) => c[0])).toEqual(['evalsha', 'get', 'hget']);
  });

  test('a workspace that configured it (even disabled): the same settings as getBillingSettings', async () => {
    const rm = new ReadModels(env.redis, env.ks);
    for (const [ws, enabled] of [
      ['on', '1'],
      ['off', '0'],
    ]) {
      await env.redis.hset(settingsKey(ws), {
        pm: 'pm_1',
        arEnabled: enabled,
        arThreshold: '9007199254740993',
        arAmount: '5',
        arCap: '',
        rev: '4',
      });
      await env.redis.hset(env.ks.rm('billing-settings', '0', 'ws', ws, 'months'), '2026-11', '9007199254740995');
      const got = await autoReloadSettings(rm, ws, '2026-11');
      expect(got).toEqual(await getBillingSettings(rm, ws, '2026-11'));
      expect(got).toMatchObject({
        autoReload: { enabled: enabled === '1', threshold: 9007199254740993n, amount: 5n, monthlyCap: null },
        reloadedThisMonth: 9007199254740995n,
      });
    }
  });
});
