import { randomUUID } from 'node:crypto';
import { createLogger } from '../../../src/platform/log';
import { PartitionLease } from '../../../src/platform/projections/partition-lease';
import { PartitionedProjector } from '../../../src/platform/projections/partitioned-projector';
import type { RecordedEvent } from '../../../src/platform/eventstore/port';
import { fnv1a, forPartition, ownedBy, partitionKeyspaces, partitionOf } from '../../../src/platform/projections/partitions';
import type { Reactor } from '../../../src/platform/projections/projection';
import { ProjectionRunner } from '../../../src/platform/projections/runner';
import { fxExpected, fxLedger } from '../../support/fixtures/projections';
import { projectionEnv, ProjectionEnv } from '../../support/fixtures/env';
import { until } from '../../support/wait';

// Partitioned projections (src/platform/projections/partitions.ts) over the real SQLite store and Redis.
let env: ProjectionEnv;
beforeEach(() => (env = projectionEnv()));
afterEach(() => env.dispose());

const log = createLogger('silent');

/** fxLedger events spread over 12 workspaces. */
async function appendWs(n: number, seq = { i: 0 }): Promise<bigint> {
  let last = 0n;
  for (let k = 0; k < n; k++) {
    const i = seq.i++;
    const type = i % 5 === 4 ? 'FxNoise' : i % 3 === 2 ? 'FxDebited' : 'FxCredited';
    const data = { workspaceId: `ws-${i % 12}`, account: `acct-${i % 7}`, amount: String(1 + (i % 13)) };
    last = (await env.store.append(`fx-${i % 3}`, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' })).position;
  }
  return last;
}

/** The fx-ledger model summed over partitions, with each partition's checkpoint. */
async function merged(count: number) {
  const key = (...p: string[]) => env.ks.rm('fx-ledger', '0', ...p);
  const applied = await env.redis.hgetall(key('applied'));
  const positions = await env.redis.zrange(key('positions'), 0, -1);
  const checkpoints = await Promise.all(
    partitionKeyspaces(env.prefix, count).map(async (pks) => (await env.redis.get(pks.checkpoint('fx-ledger', '0'))) ?? '0'),
  );
  return {
    applied,
    positions: positions.sort((a, b) => Number(BigInt(a) - BigInt(b))),
    checkpoints,
    balance: await env.redis.hgetall(key('balance')),
  };
}

it('spreads workspaces over partitions by a stable hash, and events without one go to partition 0', () => {
  const e = (data: unknown) => ({ id: 'x', stream: 's', revision: 0n, position: 1n, type: 'T', data, metadata: {}, created: '' });
  expect(partitionOf(e({ workspaceId: 'ws-1' }), 4)).toBe(partitionOf(e({ workspaceId: 'ws-1', other: 1 }), 4));
  expect(partitionOf(e({ userId: 'u' }), 4)).toBe(0);
  const used = new Set(Array.from({ length: 64 }, (_, i) => partitionOf(e({ workspaceId: `ws-${i}` }), 4)));
  expect(used).toEqual(new Set([0, 1, 2, 3]));
});

it("gives each partition a batch guard key of its own, so one runner's failed check aborts no other partition's batch", () => {
  const guards = partitionKeyspaces(env.prefix, 3).map((pks) => pks.commitGuard);
  expect(new Set(guards).size).toBe(3);
  expect(guards.every((g) => g.startsWith(env.prefix))).toBe(true);
});

it('two projectors share the partitions, apply every event once, and one takes over what the other gave up', async () => {
  const opts = {
    store: env.store,
    prefix: env.prefix,
    partitions: 4,
    leaseMs: 600,
    connect: async () => env.connect(),
    projections: [fxLedger()],
    batchSize: 50,
    log,
  };
  const a = new PartitionedProjector(opts);
  const b = new PartitionedProjector(opts);
  await a.start();
  await b.start();
  const seq = { i: 0 };
  let head = await appendWs(120, seq);
  await until(async () => a.partitions.length + b.partitions.length === 4 && a.partitions.length === 2, 15_000);
  await until(async () => (await merged(4)).checkpoints.every((c) => c === head.toString()), 20_000);
  await a.stop();
  head = await appendWs(60, seq);
  await until(async () => b.partitions.length === 4, 15_000);
  await until(async () => (await merged(4)).checkpoints.every((c) => c === head.toString()), 20_000);
  await b.stop();
  const all = await env.store.readAll();
  const want = fxExpected(all);
  const got = await merged(4);
  expect(Object.values(got.applied).filter((c) => c !== '1')).toEqual([]);
  expect(got.positions).toEqual(want.positions);
  expect(got.balance).toEqual(want.balance);
});

it('refuses the batch of an owner whose lease moved while it was paused, and that owner stops', async () => {
  const [p0] = partitionKeyspaces(env.prefix, 2);
  const first = new PartitionLease(env.connect(), p0, 'first', 60_000);
  expect(await first.acquire()).toBe(true);
  let fencedOut = false;
  const runner = new ProjectionRunner({
    store: env.store,
    redis: env.connect(),
    ks: p0,
    projections: [forPartition(fxLedger(), p0)],
    batchSize: 50,
    log,
    fence: { key: p0.fence, token: () => first.token },
    onFencedOut: () => (fencedOut = true),
  });
  const seq = { i: 0 };
  const head = await appendWs(24, seq);
  await runner.start();
  await until(async () => (await env.redis.get(p0.checkpoint('fx-ledger', '0'))) === head.toString(), 10_000);
  // As after a pause past the lease: the lease expired and another projector took the partition.
  // The first still believes it holds its token (it has not renewed since).
  await env.redis.del(p0.lease);
  const second = new PartitionLease(env.connect(), p0, 'second', 60_000);
  expect(await second.acquire()).toBe(true);
  await appendWs(24, seq);
  await until(async () => fencedOut, 10_000);
  expect(await env.redis.get(p0.checkpoint('fx-ledger', '0'))).toBe(head.toString());
  await runner.stop();
});

it("runs the reactors in each partition over that partition's events only, each after its partition applied it", async () => {
  const [p0, p1] = partitionKeyspaces(env.prefix, 2);
  // Partition 1 belongs to a projector that applies nothing (as one far behind would).
  expect(await new PartitionLease(env.connect(), p1, 'stalled', 60_000).acquire()).toBe(true);
  const reacted: Array<{ e: RecordedEvent; applied: string | null }> = [];
  const reactor: Reactor = {
    name: 'fx-reactor',
    handles: new Set(['FxCredited', 'FxDebited']),
    async react(e) {
      reacted.push({ e, applied: await env.redis.hget(env.ks.rm('fx-ledger', '0', 'applied'), e.id) });
    },
  };
  const a = new PartitionedProjector({
    store: env.store,
    prefix: env.prefix,
    partitions: 2,
    leaseMs: 60_000,
    connect: async () => env.connect(),
    projections: [fxLedger()],
    reactors: [reactor],
    batchSize: 8,
    log,
  });
  await a.start();
  expect(a.partitions).toEqual([0]);
  const head = await appendWs(60);
  await until(async () => (await env.redis.get(p0.reactorCheckpoint('fx-reactor'))) === head.toString(), 20_000);
  await a.stop();
  const mine = (await env.store.readAll()).filter((e) => reactor.handles.has(e.type) && partitionOf(e, 2) === 0);
  expect(mine.length).toBeGreaterThan(0);
  expect(reacted.map((r) => r.e.id)).toEqual(mine.map((e) => e.id));
  expect(reacted.filter((r) => r.applied !== '1')).toEqual([]);
});

it("moves a partition's checkpoints over batches of other partitions' events in one script, which the fence refuses too", async () => {
  const [p0] = partitionKeyspaces(env.prefix, 2);
  const lease = new PartitionLease(env.connect(), p0, 'first', 60_000);
  expect(await lease.acquire()).toBe(true);
  let fencedOut = false;
  const projections = [forPartition(fxLedger(), p0)];
  const runner = new ProjectionRunner({
    store: env.store,
    redis: env.connect(),
    ks: p0,
    projections,
    batchSize: 50,
    log,
    fence: { key: p0.fence, token: () => lease.token },
    onFencedOut: () => (fencedOut = true),
    owns: ownedBy(p0, projections),
  });
  await runner.start();
  // Events of partition 1's workspaces only, one at a time: every live batch is another partition's.
  const others = Array.from({ length: 40 }, (_, i) => `ws-${i}`).filter((w) => partitionOf({ data: { workspaceId: w } } as never, 2) === 1);
  const append = async (n: number) => {
    let last = 0n;
    for (let i = 0; i < n; i++) {
      const data = { workspaceId: others[i % others.length], account: 'a', amount: '1' };
      last = (await env.store.append('fx-other', [{ id: randomUUID(), type: 'FxCredited', data }], { expectedRevision: 'any' })).position;
    }
    return last;
  };
  const head = await append(6);
  await until(async () => (await env.redis.get(p0.checkpoint('fx-ledger', '0'))) === head.toString(), 10_000);
  expect(await env.redis.hgetall(env.ks.rm('fx-ledger', '0', 'applied'))).toEqual({});
  // The lease moved while this runner was paused: its next checkpoint-only batch must be refused.
  await env.redis.del(p0.lease);
  expect(await new PartitionLease(env.connect(), p0, 'second', 60_000).acquire()).toBe(true);
  await append(3);
  await until(async () => fencedOut, 10_000);
  expect(await env.redis.get(p0.checkpoint('fx-ledger', '0'))).toBe(head.toString());
  await runner.stop();
});

it("never parses another partition's events: their workspace is read from the JSON text, catching up and live", async () => {
  const [p0] = partitionKeyspaces(env.prefix, 2);
  // Every event the store hands the runner, by id (the store's own objects, as the runner got them).
  const handed = new Map<string, RecordedEvent>();
  const keep = (e: RecordedEvent) => void handed.set(e.id, e);
  const store = Object.create(env.store) as typeof env.store;
  store.readAll = async (o) => (await env.store.readAll(o)).map((e) => (keep(e), e));
  store.subscribeToAll = (o) => {
    const sub = env.store.subscribeToAll(o);
    return {
      close: () => sub.close(),
      async *[Symbol.asyncIterator]() {
        for await (const e of sub) yield (keep(e), e);
      },
    };
  };
  const runner = new ProjectionRunner({
    store,
    redis: env.connect(),
    ks: p0,
    projections: [forPartition(fxLedger(), p0)],
    owns: ownedBy(p0, [fxLedger()]),
    batchSize: 8,
    log,
  });
  const seq = { i: 0 };
  await appendWs(36, seq); // read by the catch-up
  await runner.start();
  const head = await appendWs(36, seq); // read live
  await until(async () => (await env.redis.get(p0.checkpoint('fx-ledger', '0'))) === head.toString(), 10_000);
  await runner.stop();
  const stored = await env.store.readAll();
  const partitionOfId = new Map(stored.map((e) => [e.id, fnv1a((e.data as { workspaceId: string }).workspaceId) % 2]));
  const seen = [...handed.values()].filter((e) => partitionOfId.has(e.id));
  expect(new Set(seen.map((e) => e.id)).size).toBe(72);
  const parsed = (e: RecordedEvent) => Object.getOwnPropertyDescriptor(e, 'data')!.get === undefined;
  expect(seen.filter((e) => partitionOfId.get(e.id) === 1 && parsed(e)).map((e) => e.type)).toEqual([]);
  // Its own events were applied (parsed when its projection read them).
  expect(seen.some((e) => partitionOfId.get(e.id) === 0 && e.type !== 'FxNoise' && parsed(e))).toBe(true);
});
