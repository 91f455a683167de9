import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { EventMetadata, RecordedEvent } from '../../src/platform/eventstore/port';
import { applyBatch, loadProjectionState } from '../../src/platform/projections/apply-batch';
import { Keyspace } from '../../src/platform/projections/keyspace';
import type { EventShape, Projection } from '../../src/platform/projections/projection';
import { ReadModels } from '../../src/platform/projections/read-models';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from './redis';
import { disconnectRedis } from '../../src/platform/redis';

/** One given event: one of the projection's own (typed), optionally with where and when the store recorded it. */
export type Given<E extends EventShape> = E extends EventShape
  ? E & { stream?: string; created?: string; metadata?: EventMetadata }
  : never;

/** What `then` reads the read model with: the projection's own queries take `readModels`. */
export interface ProjectionWorld {
  redis: Redis;
  ks: Keyspace;
  readModels: ReadModels;
}

/**
 * The projection twin of gwt.ts: given(events).then(check). The events go through the runner's own
 * apply path (loadProjectionState, applyBatch, one MULTI with the checkpoint) into the real Redis
 * under a prefix of their own, recorded at positions 1, 2, … and, unless an event says otherwise,
 * at `at` a second apart. `check` reads the read model back with the projection's queries.
 *
 *   const spec = projectionSpec(usersProjection);
 *   test('…', () => spec.given({ type: 'UserRegistered', data: {…} }).then(async ({ readModels }) => {…}));
 *
 * Call projectionSpec at the top of a test file: it connects before the tests and removes every key
 * it wrote after them.
 */
export function projectionSpec<E extends EventShape>(projection: Projection<E>, opts: { at?: string; live?: boolean } = {}) {
  const at = Date.parse(opts.at ?? '2026-03-15T12:00:00.000Z');
  let redis: Redis;
  const prefixes: string[] = [];
  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL, { lazyConnect: true });
    await redis.connect();
  });
  afterAll(async () => {
    for (const p of prefixes) await cleanupPrefix(TEST_REDIS_URL, p);
    if (redis) disconnectRedis(redis);
  });
  return {
    given(...events: Given<E>[]) {
      return {
        /** Applies the events, checks the checkpoint moved to the last of them, then runs `check`. */
        async then(check: (w: ProjectionWorld) => Promise<void>): Promise<void> {
          const ks = new Keyspace(uniquePrefix('projection-gwt'));
          prefixes.push(ks.prefix);
          const recorded: RecordedEvent[] = events.map((e, i) => ({
            id: randomUUID(),
            stream: e.stream ?? 'test-stream',
            revision: BigInt(i),
            position: BigInt(i + 1),
            type: e.type,
            data: e.data,
            metadata: e.metadata ?? {},
            created: e.created ?? new Date(at + i * 1000).toISOString(),
          }));
          const state = await loadProjectionState(redis, ks, projection.name);
          const multi = redis.multi();
          const checkpoint = applyBatch(ks, projection as Projection, state, recorded, multi, opts.live ?? true);
          const results = (await multi.exec()) ?? [];
          const failed = results.find(([err]) => err);
          if (failed) throw failed[0];
          expect(checkpoint).toBe(BigInt(recorded.length));
          await check({ redis, ks, readModels: new ReadModels(redis, ks) });
        },
      };
    },
  };
}
