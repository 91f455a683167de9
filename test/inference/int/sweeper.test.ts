import { randomUUID } from 'node:crypto';
import { requested } from '../../../src/inference/metering';
import { tokenCost } from '../../../src/inference/metering';
import { streams } from '../../../src/platform/streams';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import type { Services } from '../../../src/services';
import { sweepAbandoned, SweepDeps } from '../../../src/inference/workers/sweeper';
import type { TestServer } from '../../support/harness';
import { flushPrefix, TEST_REDIS_URL } from '../../support/redis';
import { eventually, until } from '../../support/wait';
import { authHeaders, balanceOf, fund, inferenceEvents, seedFundedKey, seedKey, settle } from './support/seed';
import { ScriptedBackend, startInferenceServer } from './support/server';

const prices = { inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n };
const HOUR = 3600_000;

function deps(s: Services): SweepDeps {
  return { store: s.store, redis: s.redis, ks: s.ks, prices, now: () => new Date(), newId: randomUUID, log: s.log };
}

/** A request whose process died: held, maybe recorded, never completed. */
async function orphan(s: Services, workspaceId: string, opts: { recorded: boolean; ageMs: number }) {
  const requestId = randomUUID();
  const reserved = tokenCost(prices, 100, 50);
  const r = await new Reservations(s.redis, s.ks).reserve(workspaceId, requestId, reserved, Date.now() - opts.ageMs);
  expect(r.ok).toBe(true);
  if (opts.recorded) {
    const e = requested(
      {
        requestId,
        workspaceId,
        keyId: 'k',
        config: 'service_3_pi',
        endpoint: 'inference',
        promptTokens: 100,
        maxTokens: 50,
        webSearch: false,
      },
      reserved,
    );
    await s.store.append(streams.inference(requestId), [{ id: randomUUID(), ...e }], { expectedRevision: 'no_stream' });
  }
  return requestId;
}

describe('sweepAbandoned', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startInferenceServer();
  });
  afterAll(() => server.close());

  test('closes requests whose process died, releases holds that never reached the store, leaves young ones alone', async () => {
    const s = server.services;
    const key = await seedFundedKey(s, { usd: '1' });
    const reservations = new Reservations(s.redis, s.ks);
    const died = await orphan(s, key.workspaceId, { recorded: true, ageMs: HOUR });
    const neverRecorded = await orphan(s, key.workspaceId, { recorded: false, ageMs: HOUR });
    const young = await orphan(s, key.workspaceId, { recorded: true, ageMs: 1000 });

    const report = await sweepAbandoned(deps(s), { minAgeMs: 15 * 60_000 });
    expect(report).toEqual({ released: 1, closed: 1, waiting: 0 });

    const events = await inferenceEvents(s, died);
    expect(events.map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
    expect(events[1].data).toMatchObject({ finishReason: 'abandoned', inputTokens: 100, outputTokens: 0 });
    expect(events[2].data).toMatchObject({ inputTokens: 100, outputTokens: 0, amountNanoUsd: '250000' });
    expect(events[2].metadata.actor).toBe('system:sweeper');
    expect(await inferenceEvents(s, neverRecorded)).toHaveLength(0);

    await settle(s);
    // The projector applied the debit and released its hold; only the young request still holds.
    expect(await reservations.held(key.workspaceId)).toBe(tokenCost(prices, 100, 50));
    expect(await balanceOf(s, key.workspaceId)).toBe(1_000_000_000n - 250_000n);
    expect((await inferenceEvents(s, young)).length).toBe(1);

    // A second sweep finds nothing to do: one debit only.
    expect(await sweepAbandoned(deps(s), { minAgeMs: 15 * 60_000 })).toEqual({ released: 0, closed: 0, waiting: 0 });
  });

  test('a stale hold whose debit was already applied is released', async () => {
    const s = server.services;
    const key = await seedFundedKey(s, { usd: '1' });
    const res = await fetch(`${server.url}/external/api/inference`, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 3 }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id')!;
    await settle(s);
    // Something put the hold back after the debit (it must not stay forever).
    await new Reservations(s.redis, s.ks).reserve(key.workspaceId, requestId, 1000n, Date.now() - HOUR);
    expect(await sweepAbandoned(deps(s), { minAgeMs: 60_000 })).toMatchObject({ released: 1, closed: 0 });
    expect(await new Reservations(s.redis, s.ks).held(key.workspaceId)).toBe(0n);
    expect((await inferenceEvents(s, requestId)).filter((e) => e.type === 'TokensDebited')).toHaveLength(1);
  });

  // RELEASE removes the sweeper's index entry whether or not the hold was still there. With the
  // ZREM inside `if amt`, an entry whose hold Redis lost (eviction under allkeys-*, a partial
  // restore) would come back on every sweep, forever, and 500 of them would starve the sweep.
  test('an index entry whose hold is gone is swept once, not on every sweep', async () => {
    const s = server.services;
    const key = await seedFundedKey(s, { usd: '1' });
    const reservations = new Reservations(s.redis, s.ks);
    const requestId = await orphan(s, key.workspaceId, { recorded: false, ageMs: HOUR });
    await s.redis.del(s.ks.shared('resv', key.workspaceId));
    const mine = async () => (await reservations.openBefore(Date.now())).filter((o) => o.requestId === requestId);
    expect(await mine()).toHaveLength(1);

    expect(await sweepAbandoned(deps(s), { minAgeMs: 15 * 60_000 })).toEqual({ released: 1, closed: 0, waiting: 0 });
    expect(await mine()).toEqual([]);
    expect(await sweepAbandoned(deps(s), { minAgeMs: 15 * 60_000 })).toEqual({ released: 0, closed: 0, waiting: 0 });
  });
});

test('a live request that the sweeper closed first is not debited twice', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const backend = new ScriptedBackend(() => ({ chunks: ['slow', ' reply'] }));
  const original = backend.generate.bind(backend);
  backend.generate = async function* (p) {
    await gate;
    return yield* original(p);
  };
  const server = await startInferenceServer({}, { backend });
  try {
    const s = server.services;
    const key = await seedFundedKey(s, { usd: '1' });
    const pending = fetch(`${server.url}/external/api/inference`, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 5 }),
    });
    // Wait until the request is recorded, then sweep as if it were old.
    await until(async () => (await s.store.readAll()).some((e) => e.type === 'InferenceRequested'), 15_000, 'the request to be recorded');
    expect(await sweepAbandoned(deps(s), { minAgeMs: -60_000 })).toMatchObject({ closed: 1 });
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    const events = await inferenceEvents(s, res.headers.get('x-request-id')!);
    expect(events.filter((e) => e.type === 'TokensDebited')).toHaveLength(1);
    await settle(s);
    expect(await new Reservations(s.redis, s.ks).held(key.workspaceId)).toBe(0n);
  } finally {
    await server.close();
  }
});

test('the BullMQ repeatable job runs the sweep', async () => {
  const server = await startInferenceServer({ SWEEPER_ENABLED: 'true', SWEEPER_INTERVAL_MS: '200', SWEEPER_MIN_AGE_MS: '1000' });
  try {
    const s = server.services;
    const key = await seedKey(s);
    await fund(s, key.workspaceId, { usd: '1' });
    const requestId = await orphan(s, key.workspaceId, { recorded: true, ageMs: HOUR });
    const events = await eventually(
      () => inferenceEvents(s, requestId),
      (e) => e.length >= 3,
      20_000,
    );
    expect(events.map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
    const jobs = await s.redis.keys(`${s.config.REDIS_PREFIX}bull:inference-sweeper:*`);
    expect(jobs.length).toBeGreaterThan(0);
  } finally {
    await server.close();
  }
});

test('the sweep schedule comes back after Redis lost its data', async () => {
  const server = await startInferenceServer({ SWEEPER_ENABLED: 'true', SWEEPER_INTERVAL_MS: '200', SWEEPER_MIN_AGE_MS: '1000' });
  try {
    const s = server.services;
    const key = await seedKey(s);
    await fund(s, key.workspaceId, { usd: '1' });
    // Redis loses everything, the job scheduler included (a FLUSHDB on the service's own prefix)
    await flushPrefix(TEST_REDIS_URL, server.prefix);
    // the read models come back first (the projector rebuilds them), then a request is orphaned
    await eventually(
      () => s.redis.get(s.ks.ready('balances')),
      (ready) => ready !== null,
      20_000,
    );
    const requestId = await orphan(s, key.workspaceId, { recorded: true, ageMs: HOUR });
    const events = await eventually(
      () => inferenceEvents(s, requestId),
      (e) => e.length >= 3,
      20_000,
    );
    expect(events.map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
  } finally {
    await server.close();
  }
});

describe('sweepAbandoned over partitioned projections', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startInferenceServer({ PROJECTION_PARTITIONS: '3' });
  });
  afterAll(() => server.close());

  // With partitions there is no whole-stream balances checkpoint: the sweeper read that key,
  // found nothing (0) and left a stale hold "waiting" for ever. It reads the workspace's partition's.
  test('a stale hold whose debit its partition already applied is released', async () => {
    const s = server.services;
    const key = await seedFundedKey(s, { usd: '1' });
    const res = await fetch(`${server.url}/external/api/inference`, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 3 }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id')!;
    await settle(s);
    await new Reservations(s.redis, s.ks).reserve(key.workspaceId, requestId, 1000n, Date.now() - HOUR);
    expect(await sweepAbandoned({ ...deps(s), partitions: 3 }, { minAgeMs: 60_000 })).toMatchObject({ released: 1, closed: 0 });
    expect(await new Reservations(s.redis, s.ks).held(key.workspaceId)).toBe(0n);
  });
});
