import { randomUUID } from 'node:crypto';
import { requested, reservationFor } from '../../../src/domain/inference/metering';
import { streams } from '../../../src/domain/streams';
import { Reservations } from '../../../src/projections/balances/reservations';
import type { Services } from '../../../src/services';
import { sweepAbandoned, SweepDeps } from '../../../src/workers/sweeper';
import type { TestServer } from '../../support/harness';
import { cleanupPrefix, TEST_REDIS_URL } from '../../support/redis';
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
  const reserved = reservationFor(prices, 100, 50);
  const r = await new Reservations(s.redis, s.ks).reserve(workspaceId, requestId, reserved, Date.now() - opts.ageMs);
  expect(r.ok).toBe(true);
  if (opts.recorded) {
    const e = requested(
      { requestId, workspaceId, keyId: 'k', config: 'service_3_pi', endpoint: 'inference', promptTokens: 100, maxTokens: 50, webSearch: false },
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
    expect(await reservations.held(key.workspaceId)).toBe(reservationFor(prices, 100, 50));
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
    let requested;
    // Deadlines, not counts of polls (here and below): a loaded machine takes longer, a broken one never gets there.
    for (const deadline = Date.now() + 15_000; !requested && Date.now() < deadline; ) {
      requested = (await s.store.readAll()).find((e) => e.type === 'InferenceRequested');
      if (!requested) await new Promise((r) => setTimeout(r, 10));
    }
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
    let events = await inferenceEvents(s, requestId);
    for (const deadline = Date.now() + 20_000; events.length < 3 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 50));
      events = await inferenceEvents(s, requestId);
    }
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
    await cleanupPrefix(TEST_REDIS_URL, server.prefix);
    // the read models come back first (the projector rebuilds them), then a request is orphaned
    for (const deadline = Date.now() + 20_000; (await s.redis.get(s.ks.ready('balances'))) === null && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    const requestId = await orphan(s, key.workspaceId, { recorded: true, ageMs: HOUR });
    let events = await inferenceEvents(s, requestId);
    for (const deadline = Date.now() + 20_000; events.length < 3 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 50));
      events = await inferenceEvents(s, requestId);
    }
    expect(events.map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
  } finally {
    await server.close();
  }
});
