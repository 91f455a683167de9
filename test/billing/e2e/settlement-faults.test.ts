/**
 * Settlement under faults, as real processes over PostgreSQL and one Redis (a projector process, api
 * processes started per test, the instant upstream in the test process):
 *  - an api killed between the completion append and the pending step: the projector settles it once;
 *  - the api's PostgreSQL connection cut right after COMMIT (a TCP relay): the caller gets the reply it
 *    paid for, and a cut before the append reaches the server means 503 and nothing billed;
 *  - the projector stopped for 30 s under load: no 402 for workspaces with ample credit, and balances
 *    equal a replay once it is back.
 * Runs when TEST_DATABASE_URL is set.
 */
import { getBalance } from '../../../src/billing/projections/balances/queries';
import type { Child } from '../../support/child-process';
import { CutRelay } from '../../support/cut-relay';
import { TEST_DATABASE_URL } from '../../support/postgres';
import { liveAndReplay } from '../../support/read-model-dump';
import { testRedisAddress, testRedisUrlVia } from '../../support/redis';
import { until } from '../../support/wait';
import { Cluster, Load } from '../../platform/e2e/support/cluster';

const maybe = TEST_DATABASE_URL ? describe : describe.skip;

jest.setTimeout(300_000);

const DEPOSIT_USD = '100';
const DEPOSIT = 100_000_000_000n;

maybe('settlement under faults (PostgreSQL, separate api and projector processes)', () => {
  const cluster = new Cluster();
  let projector: Child;
  let apiUrl: string;

  beforeAll(async () => {
    await cluster.start('settlefaults', {});
    projector = (await cluster.role('projector')).child;
    apiUrl = (await cluster.role('api')).url;
    // A request whose prompt says SLOW takes its upstream 1.5 s (model time), the others none.
    cluster.upstream.behave = (body) => {
      const slow = (body.messages ?? []).some((m) => m.content.includes('SLOW'));
      return { chunks: ['Hello', ' there', '!'], delayMs: slow ? 500 : 0 };
    };
  }, 240_000);

  afterAll(() => cluster.close());

  const held = async (ws: string) => ({
    total: (await cluster.redis.hget(`${cluster.prefix}resv:{ws:${ws}}`, '=total')) ?? '0',
    requests: Object.fromEntries(
      Object.entries(await cluster.redis.hgetall(`${cluster.prefix}resv:{ws:${ws}}`)).filter(([f]) => !f.startsWith('=')),
    ),
  });
  const streamOf = async (requestId: string) =>
    (await cluster.store.readStream(`inference-${requestId}`)).map((e) => ({ type: e.type, data: e.data as Record<string, unknown> }));
  const spentBy = async (ws: string) => (await cluster.debitsOf(ws)).reduce((s, d) => s + BigInt(d.amountNanoUsd), 0n);

  test('an api process SIGKILLed between the completion append and the pending step: the projector clears the hold and debits once', async () => {
    // This api reaches Redis through a relay the test can stall: what it sends after the stall never arrives.
    const relay = new CutRelay(testRedisAddress());
    await relay.listen();
    try {
      // Through the relay to the same db as every other process of the test (REDIS_URL may name one).
      const { child: doomed, url } = await cluster.role('api', { REDIS_URL: testRedisUrlVia('127.0.0.1', relay.port) });
      // Set up through the other api: the only connection to the doomed one is the request it dies in.
      const { ws, secret } = await cluster.funded(apiUrl, 'killed-api', DEPOSIT_USD);
      const seen = cluster.upstream.requests.length;
      const reply = cluster.infer(url, secret, { text: 'SLOW: say hello.' }).catch((err: Error) => err);
      // Generating: admitted, so its hold is in Redis.
      await until(() => cluster.upstream.requests.length > seen, 60_000, 'the request to reach the upstream');
      expect(BigInt((await held(ws)).total)).toBeGreaterThan(0n);
      relay.stall();
      // The completion lands in the store (PostgreSQL is not behind the relay); the pending step that
      // follows it goes to the stalled Redis.
      const [debit] = await until(
        async () => {
          const d = await cluster.debitsOf(ws);
          return d.length ? d : null;
        },
        60_000,
        'the completion to be appended',
      );
      await until(() => Buffer.concat(relay.held).includes(debit.requestId), 30_000, 'the pending step to be sent');
      await doomed.kill('SIGKILL');
      // Its caller never got an answer (the process died): no status.
      expect(((await reply) as { status?: number }).status).toBeUndefined();

      // The projector applies the debit: the hold goes, the balance drops by the cost, once.
      const settled = await until(
        async () => {
          const h = await held(ws);
          return h.total === '0' && Object.keys(h.requests).length === 0 ? h : null;
        },
        60_000,
        'the hold to be cleared',
      );
      expect(settled.requests).toEqual({});
      await until(
        async () => (await getBalance(cluster.rm, ws)).balance === DEPOSIT - BigInt(debit.amountNanoUsd),
        60_000,
        'the debit to be applied',
      );
      expect(await cluster.debitsOf(ws)).toEqual([debit]);
      expect(BigInt(debit.amountNanoUsd)).toBeGreaterThan(0n);
      console.log(
        `api SIGKILLed after the completion append: pending step never reached Redis (${relay.held.length} chunks held); hold cleared, debited ${debit.amountNanoUsd} nano-USD once`,
      );
    } finally {
      await relay.close();
    }
  });

  test("the api's PostgreSQL connection cut right after COMMIT: the caller gets the reply it paid for; cut before the append arrives: 503 and nothing billed", async () => {
    const target = new URL(cluster.db.url);
    const relay = new CutRelay({ host: target.hostname, port: Number(target.port || 5432) });
    await relay.listen();
    try {
      const via = new URL(cluster.db.url);
      via.host = `127.0.0.1:${relay.port}`;
      const { url } = await cluster.role('api', { DATABASE_URL: via.toString() });
      const { ws, secret } = await cluster.funded(apiUrl, 'cut-pg', DEPOSIT_USD);
      // Only the append of a paid completion (not the zero-cost close of an unanswered caller).
      const paidCompletion = (chunk: Buffer) => chunk.includes('InferenceCompleted') && !chunk.includes('store_unavailable');

      // Landed: the first try commits and its reply is lost; a retry would be cut before it arrives.
      // Answered from the read-back, the caller gets its reply, billed once.
      relay.arm('after-commit', { when: paidCompletion });
      relay.arm('before-send', { when: paidCompletion, times: 3 });
      const landed = await cluster.infer(url, secret);
      relay.disarm();
      expect(relay.cuts).toBeGreaterThanOrEqual(1);
      expect(landed.status).toBe(200);
      expect(JSON.parse(landed.body)).toMatchObject({ text: 'Hello there!' });
      expect((await streamOf(landed.requestId!)).map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
      const [paid] = await cluster.debitsOf(ws);
      expect(paid.requestId).toBe(landed.requestId);
      expect(BigInt(paid.amountNanoUsd)).toBeGreaterThan(0n);

      // Not landed: every try is cut before it reaches the server. 503, and nothing billed.
      const cutsBefore = relay.cuts;
      relay.arm('before-send', { when: paidCompletion, times: 10 });
      const lost = await cluster.infer(url, secret);
      relay.disarm();
      expect(relay.cuts).toBeGreaterThan(cutsBefore);
      expect(lost.status).toBe(503);
      // The request is closed at zero cost (store_unavailable) and its hold released.
      const closed = await until(
        async () => {
          const s = await streamOf(lost.requestId!);
          return s.length === 3 ? s : null;
        },
        60_000,
        'the unanswered request to be closed',
      );
      expect(closed[1].data).toMatchObject({ finishReason: 'store_unavailable' });
      expect(closed[2].data).toMatchObject({ amountNanoUsd: '0' });
      await until(async () => (await held(ws)).total === '0', 60_000, 'no hold left');
      await until(async () => (await getBalance(cluster.rm, ws)).balance === DEPOSIT - BigInt(paid.amountNanoUsd), 60_000, 'the balance');
      expect(await spentBy(ws)).toBe(BigInt(paid.amountNanoUsd));
      console.log(
        `PostgreSQL cut after COMMIT: 200 with its reply, billed ${paid.amountNanoUsd} once; cut before send: 503, billed 0 (${relay.cuts} cuts)`,
      );
    } finally {
      await relay.close();
    }
  });

  test('the projector stopped for 30 s under load: no 402 for workspaces with ample credit, and once it is back balances equal a replay', async () => {
    const { url } = await cluster.role('api');
    const payers = [await cluster.funded(url, 'ample-a', DEPOSIT_USD), await cluster.funded(url, 'ample-b', DEPOSIT_USD)];
    // max_tokens 1024: each request holds about 5 USD while it runs but costs about 0.2 USD, so
    // 100 USD covers every request below (at most 200 per workspace) but not their holds.
    const secrets = payers.map((p) => p.secret);
    projector.proc.kill('SIGSTOP');
    const t0 = Date.now();
    let load: Load;
    try {
      load = new Load(cluster, () => [url], secrets, 2, { maxTokens: 1024, max: 400 });
      await until(() => Date.now() - t0 >= 30_000 || load.done >= 400, 120_000, '30 s of load');
      await load.stop();
    } finally {
      projector.proc.kill('SIGCONT');
    }
    const stoppedMs = Date.now() - t0;
    const statuses = load.statuses();
    console.log(`projector stopped ${stoppedMs} ms under load: ${load.done} requests, statuses ${JSON.stringify(statuses)}`);
    expect(statuses).toEqual({ 200: load.done });
    expect(load.done).toBeGreaterThan(40);

    const { live, replay } = await liveAndReplay(cluster.db.url, cluster.store, cluster.redis, cluster.prefix, 1, cluster.masterKey);
    expect(live).toEqual(replay);
    for (const [i, p] of payers.entries()) {
      const debits = (await cluster.debitsOf(p.ws)).map((d) => d.requestId).sort();
      expect(debits).toEqual(
        load.results
          .filter((r) => r.ws === i)
          .map((r) => r.requestId!)
          .sort(),
      );
      expect((await getBalance(cluster.rm, p.ws)).balance).toBe(DEPOSIT - (await spentBy(p.ws)));
      await until(async () => (await held(p.ws)).total === '0', 30_000, 'every pending amount cleared');
    }
  });
});
