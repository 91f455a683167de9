import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RecordedEvent } from '../../../../src/platform/eventstore/port';
import { applyBatch, loadProjectionState } from '../../../../src/platform/projections/apply-batch';
import { Keyspace } from '../../../../src/platform/projections/keyspace';
import type { Projection } from '../../../../src/platform/projections/projection';
import { ReadModels } from '../../../../src/platform/projections/read-models';
import { USAGE, usageProjection } from '../../../../src/billing/projections/usage/projection';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../../support/redis';

// A request's endpoint waits inside the batch's EVAL until its debit takes it, and only those left
// at the end are written (countDebit in usage/projection.ts): a debit in a later batch must still find it, and
// an endpoint key written by an earlier batch must still go when the request is debited.
describe('usage: endpoints across batches', () => {
  const ks = new Keyspace(uniquePrefix('usage-endpoint'));
  let redis: Redis;
  let position = 0;
  beforeAll(() => (redis = new Redis(TEST_REDIS_URL)));
  afterAll(async () => {
    redis.disconnect();
    await cleanupPrefix(TEST_REDIS_URL, ks.prefix);
  });
  const at = Math.floor(Date.now() / 60_000) * 60;
  const requested = (requestId: string, endpoint: string) => ({
    type: 'InferenceRequested',
    data: {
      requestId,
      workspaceId: 'w1',
      keyId: 'k1',
      config: 'service_3_pi',
      endpoint,
      promptTokens: 1,
      maxTokens: 2,
      reservedNanoUsd: '3',
      webSearch: false,
    },
  });
  const debited = (requestId: string) => ({
    type: 'TokensDebited',
    data: {
      requestId,
      workspaceId: 'w1',
      keyId: 'k1',
      config: 'service_3_pi',
      inputTokens: 1,
      outputTokens: 2,
      inputPriceNanoUsd: '1',
      outputPriceNanoUsd: '1',
      amountNanoUsd: '3',
    },
  });
  async function batch(...events: Array<{ type: string; data: unknown }>) {
    const recorded: RecordedEvent[] = events.map((e) => ({
      id: randomUUID(),
      stream: 's',
      revision: 0n,
      position: BigInt(++position),
      type: e.type,
      data: e.data,
      metadata: {},
      created: new Date(at * 1000).toISOString(),
    }));
    const state = await loadProjectionState(redis, ks, USAGE);
    const multi = redis.multi();
    applyBatch(ks, usageProjection as Projection, state, recorded, multi, false);
    expect((await multi.exec())!.filter(([err]) => err)).toEqual([]);
  }

  test('a request debited in a later batch, one debited in the same batch, one requested again after an earlier batch', async () => {
    const k = await new ReadModels(redis, ks).keys(USAGE);
    await batch(requested('q1', 'openai'), requested('q2', 'chat'), requested('q2', 'anthropic'));
    // Left open: written with its expiry (7 days), the last endpoint given for it.
    expect(await redis.get(k('endpoint', 'q1'))).toBe('openai');
    expect(await redis.get(k('endpoint', 'q2'))).toBe('anthropic');
    expect(Number(await redis.call('EXPIRETIME', k('endpoint', 'q1')))).toBeGreaterThan(Date.now() / 1000 + 7 * 86400 - 60);
    // q1 from the earlier batch; q2 requested again and debited here; q3 requested and debited here.
    await batch(debited('q1'), requested('q2', 'chat'), debited('q2'), requested('q3', 'openai'), debited('q3'));
    for (const q of ['q1', 'q2', 'q3']) expect(await redis.exists(k('endpoint', q))).toBe(0);
    const bucket = await redis.hgetall(k('minute', 'w1', String(at)));
    expect([bucket['e:openai:req'], bucket['e:chat:req'], bucket['e:anthropic:req'], bucket['k:k1:req']]).toEqual([
      '2',
      '1',
      undefined,
      '3',
    ]);
  });
});
