import { Redis } from 'ioredis';
import type { EventStore } from '../../../src/platform/eventstore/port';
import { createLogger } from '../../../src/platform/log';
import { dropAbandonedGenerations } from '../../../src/platform/projections/generations';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import type { Projection } from '../../../src/platform/projections/projection';
import {
  adoptRebuilt,
  advanceCheckpoints,
  FencedOut,
  GenerationSwitched,
  markReady,
  RunnerState,
} from '../../../src/platform/projections/switch-over';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

/**
 * MARK_READY, ADVANCE, ADOPT and CLAIM_ORPHAN (src/platform/projections/*.lua) on the real Redis,
 * called directly: each refuses when a pointer, a checkpoint or the fence is not what the runner
 * holds, and changes nothing then; missing keys read as generation and checkpoint 0.
 */

const prefix = uniquePrefix('switch');
const ks = new Keyspace(prefix);
const redis = new Redis(TEST_REDIS_URL);
const log = createLogger('silent');
afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
});

let n = 0;
function projection(): Projection {
  return { name: `p${++n}`, handles: new Set(), apply: () => undefined } as unknown as Projection;
}
const BIG = 2n ** 63n - 1n;

test('markReady sets the ready marker only while pointer and checkpoint are what the runner holds (missing = 0)', async () => {
  const p = projection();
  const state: RunnerState = new Map([[p.name, { gen: '0', checkpoint: 0n }]]);
  await markReady(redis, ks, [p], state);
  expect(await redis.get(ks.ready(p.name))).toBe('0');
  await redis.set(ks.checkpoint(p.name, '0'), BIG.toString());
  await expect(markReady(redis, ks, [p], state)).rejects.toBeInstanceOf(GenerationSwitched);
  state.set(p.name, { gen: '0', checkpoint: BIG });
  await markReady(redis, ks, [p], state);
  expect(await redis.get(ks.ready(p.name))).toBe(BIG.toString());
});

test('advanceCheckpoints moves the keys only under the fence and the held checkpoints, and publishes', async () => {
  const [a, b] = [projection(), projection()];
  const state: RunnerState = new Map([
    [a.name, { gen: '2', checkpoint: 10n }],
    [b.name, { gen: '0', checkpoint: 0n }],
  ]);
  await redis.set(ks.active(a.name), '2');
  await redis.set(ks.checkpoint(a.name, '2'), '10');
  const fence = { key: `${prefix}fence`, token: () => 'tok' };
  const moved = [ks.checkpoint(a.name, '2'), ks.checkpoint(b.name, '0')];
  await redis.set(fence.key, 'other');
  await expect(advanceCheckpoints(redis, ks, [a, b], state, fence, 99n, moved, 99n)).rejects.toBeInstanceOf(FencedOut);
  expect(await redis.get(moved[0])).toBe('10');
  await redis.set(fence.key, 'tok');
  const sub = redis.duplicate();
  const published = new Promise<string>((resolve) => sub.on('message', (_c, m) => resolve(m)));
  await sub.subscribe(ks.progressChannel);
  await advanceCheckpoints(redis, ks, [a, b], state, fence, BIG, moved, 99n);
  expect(await redis.mget(...moved)).toEqual([BIG.toString(), BIG.toString()]);
  expect(await published).toBe('99');
  sub.disconnect();
  await expect(advanceCheckpoints(redis, ks, [a, b], state, undefined, 1n, moved, 1n)).rejects.toBeInstanceOf(GenerationSwitched);
});

test('adoptRebuilt switches to an offered generation it has caught up, and drops an offer whose rebuild is gone', async () => {
  const p = projection();
  const state: RunnerState = new Map([[p.name, { gen: '0', checkpoint: 0n }]]);
  const d = { redis, ks, projections: [p], store: {} as EventStore, batchSize: 10, log };
  await redis.set(ks.pending(p.name), '5');
  await adoptRebuilt(d, state);
  expect(await redis.exists(ks.pending(p.name))).toBe(0);
  expect(state.get(p.name)!.gen).toBe('0');
  await redis.set(ks.pending(p.name), '6');
  await redis.sadd(ks.building(p.name), '6');
  await adoptRebuilt(d, state);
  expect(await redis.get(ks.active(p.name))).toBe('6');
  expect(state.get(p.name)!.gen).toBe('6');
  expect(await redis.sismember(ks.building(p.name), '6')).toBe(0);
});

test('a generation a rebuild lock holds, or the active one, is not claimed; an orphan is, with its offer', async () => {
  const p = projection();
  await redis.sadd(ks.building(p.name), '3', '4', '7');
  await redis.set(ks.rebuildLock(p.name), JSON.stringify({ generation: '3' }));
  await redis.set(ks.active(p.name), '4');
  await redis.set(ks.pending(p.name), '7');
  await redis.set(ks.rm(p.name, '7', 'x'), '1');
  expect(await dropAbandonedGenerations(redis, ks, p.name)).toEqual(['7']);
  expect(await redis.smembers(ks.building(p.name))).toEqual(['3']);
  expect(await redis.exists(ks.pending(p.name), ks.rm(p.name, '7', 'x'))).toBe(0);
});
