import { RedisProgress } from '../../../src/platform/projections/progress';
import { projectionEnv, ProjectionEnv } from '../../support/fixtures/env';
import { sleep, until, patience } from '../../support/wait';
import { appendFx, fxExpected, fxLedger, fxSnapshot } from '../../support/fixtures/projections';

let env: ProjectionEnv;
beforeEach(() => {
  env = projectionEnv();
});
afterEach(async () => {
  await env.dispose();
});

describe('RedisProgress (an api process following a projector elsewhere)', () => {
  test('waitFor resolves when the runner announces the position, false on timeout', async () => {
    const progress = new RedisProgress(env.connect(), env.connect(), env.ks, ['fx-ledger']);
    await appendFx(env.store, 10, 5);
    expect(await progress.waitFor(10n, 100)).toBe(false);
    const runner = env.runner([fxLedger()]);
    await runner.start();
    expect(await progress.waitFor(10n, patience(5000))).toBe(true);
    const waiting = progress.waitFor(13n, 5000);
    await appendFx(env.store, 3, 3);
    expect(await waiting).toBe(true);
    expect((await fxSnapshot(env.redis, env.ks)).checkpoint).toBe('13');
  });

  test('a position reached before it subscribed is found by polling the checkpoints', async () => {
    await appendFx(env.store, 8, 4);
    const runner = env.runner([fxLedger()]);
    await runner.start();
    expect(await runner.waitFor(8n, patience(5000))).toBe(true);
    await runner.stop();
    const progress = new RedisProgress(env.connect(), env.connect(), env.ks, ['fx-ledger']);
    expect(await progress.waitFor(8n, patience(1000))).toBe(true);
    expect(await progress.waitFor(9n, 100)).toBe(false);
  });

  test('with partitions, one partition announcing a position does not satisfy a waiter: every partition must have passed it', async () => {
    const { partitionKeyspaces } = await import('../../../src/platform/projections/partitions');
    const [p0, p1] = partitionKeyspaces(env.ks.prefix, 2);
    const progress = new RedisProgress(env.connect(), env.connect(), env.ks, ['fx-ledger'], 2);
    await env.redis.mset(p0.checkpoint('fx-ledger', '0'), '0', p1.checkpoint('fx-ledger', '0'), '0');
    const waiting = progress.waitFor(10n, 600_000);
    // Partition 0 (none of the write's events) passes 10 and says so; partition 1 has not applied it.
    await env.redis.set(p0.checkpoint('fx-ledger', '0'), '10');
    await env.redis.publish(env.ks.progressChannel, '10');
    const early = await Promise.race([waiting.then(() => 'resolved'), sleep(300).then(() => 'waiting')]);
    expect(early).toBe('waiting');
    await env.redis.set(p1.checkpoint('fx-ledger', '0'), '10');
    await env.redis.publish(env.ks.progressChannel, '10');
    expect(await waiting).toBe(true);
  });

  test('with no projections every position counts as reached', async () => {
    const progress = new RedisProgress(env.connect(), env.connect(), env.ks, []);
    await appendFx(env.store, 2, 2);
    expect(await progress.waitFor(2n, patience(0))).toBe(true);
  });
});

describe('ProjectionRunner: Redis emptied under a running runner', () => {
  test('the next batch notices, and the runner rebuilds from the store without a restart', async () => {
    const runner = env.runner([fxLedger()], { batchSize: 10 });
    await runner.start();
    await appendFx(env.store, 50, 10);
    expect(await runner.waitFor(50n, patience(5000))).toBe(true);
    const keys = await env.redis.keys(`${env.prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    await env.redis.unlink(...keys);
    await sleep(50);
    await appendFx(env.store, 5, 5);
    await until(async () => (await fxSnapshot(env.redis, env.ks)).checkpoint === '55', 10_000, 'rebuilt checkpoint');
    const { gen: _g, ...model } = await fxSnapshot(env.redis, env.ks);
    expect(model).toEqual(fxExpected(await env.store.readAll()));
  });
});
