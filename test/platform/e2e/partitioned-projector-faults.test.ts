/**
 * Partitioned projectors under faults, as real processes: 3 projector processes share 6 partitions
 * (PROJECTION_PARTITIONS=6, PROJECTION_LEASE_MS=2000) of a PostgreSQL store, one api process takes
 * requests against the instant upstream, and the test does to the projectors what an operator's
 * machines do: SIGKILL one, stop one past its lease (SIGSTOP … SIGCONT), flush Redis under them.
 * After each, the read models must equal a from-scratch replay of the store, key by key: an event
 * applied twice or skipped would show. Runs when TEST_DATABASE_URL is set.
 */
import { getBalance } from '../../../src/billing/projections/balances/queries';
import type { Child } from '../../support/child-process';
import { TEST_DATABASE_URL } from '../../support/postgres';
import { liveAndReplay } from '../../support/read-model-dump';
import { flushPrefix, TEST_REDIS_URL } from '../../support/redis';
import { until } from '../../support/wait';
import { Cluster, Load } from './support/cluster';

const maybe = TEST_DATABASE_URL ? describe : describe.skip;

jest.setTimeout(300_000);

const PARTITIONS = 6;
const LEASE_MS = 2000;
const DEPOSIT_USD = '100';
const DEPOSIT = 100_000_000_000n;

maybe('partitioned projectors under faults (3 processes, 6 partitions, PostgreSQL)', () => {
  const cluster = new Cluster();
  let apiUrl: string;
  const projectors: Child[] = [];
  const wss: string[] = [];
  const secrets: string[] = [];

  /** The owner id in each partition's lease (null: nobody holds it). */
  async function owners(): Promise<Array<string | null>> {
    const tokens = await cluster.redis.mget(
      ...Array.from({ length: PARTITIONS }, (_, i) => `${cluster.prefix}proj:partition:${i}of${PARTITIONS}:lease`),
    );
    return tokens.map((t) => (t === null ? null : t.slice(t.indexOf('-') + 1)));
  }
  /** The owner ids a projector took partitions under (one per process, from its log). */
  function ownerIdOf(p: Child): string {
    const took = p.matching(/"took partition"/);
    if (took.length === 0) throw new Error('this projector never took a partition');
    const token = (JSON.parse(took[0]) as { token: string }).token;
    return token.slice(token.indexOf('-') + 1);
  }
  async function startProjector(): Promise<Child> {
    const p = (await cluster.role('projector', { LOG_LEVEL: 'info' })).child;
    projectors.push(p);
    return p;
  }
  const live = () => projectors.filter((p) => p.proc.exitCode === null && p.proc.signalCode === null);
  /** Every partition held, each live projector holding at least one and at most its share (the rebalancing settled). */
  async function balanced(): Promise<boolean> {
    const o = await owners();
    if (o.some((x) => x === null)) return false;
    const ids = live().map((p) => (p.matching(/"took partition"/).length ? ownerIdOf(p) : null));
    const fair = Math.ceil(PARTITIONS / ids.length);
    return ids.every((id) => id !== null && o.filter((x) => x === id).length >= 1 && o.filter((x) => x === id).length <= fair);
  }
  /** Every request of every test so far, by workspace index. */
  const served: Array<{ ws: number; status: number; requestId: string | null }> = [];
  /** Acknowledged requests were each debited once, nothing else was, and the read models equal a replay. */
  async function expectExact(load: Load): Promise<void> {
    served.push(...load.results);
    for (const [i, ws] of wss.entries()) {
      const debits = (await cluster.debitsOf(ws)).map((d) => d.requestId).sort();
      const acked = served.filter((r) => r.ws === i && r.status === 200).map((r) => r.requestId!);
      expect(debits).toEqual(acked.sort());
    }
    const { live: got, replay } = await liveAndReplay(
      cluster.db.url,
      cluster.store,
      cluster.redis,
      cluster.prefix,
      PARTITIONS,
      cluster.masterKey,
    );
    expect(got).toEqual(replay);
    for (const ws of wss) {
      const spent = (await cluster.debitsOf(ws)).reduce((s, d) => s + BigInt(d.amountNanoUsd), 0n);
      expect((await getBalance(cluster.rm, ws)).balance).toBe(DEPOSIT - spent);
    }
  }

  beforeAll(async () => {
    await cluster.start('partfaults', { PROJECTION_PARTITIONS: String(PARTITIONS), PROJECTION_LEASE_MS: String(LEASE_MS) });
    // The first projector creates the schema; the others and the api wait on the same lock anyway.
    await startProjector();
    const [, , a] = await Promise.all([startProjector(), startProjector(), cluster.role('api')]);
    apiUrl = a.url;
    await until(balanced, 120_000, 'the 3 projectors to share the 6 partitions', 100);
    for (const label of ['a', 'b', 'c']) {
      const f = await cluster.funded(apiUrl, `part-${label}`, DEPOSIT_USD);
      wss.push(f.ws);
      secrets.push(f.secret);
    }
  }, 240_000);

  afterAll(() => cluster.close());

  test('SIGKILL one of 3 projectors under load: its partitions move to the survivors within seconds, and the read models equal a replay', async () => {
    const load = new Load(cluster, () => [apiUrl], secrets, 4);
    await until(() => load.done >= 30, 120_000, '30 requests');
    const victim = projectors[0];
    const dead = ownerIdOf(victim);
    const held = (await owners()).flatMap((o, i) => (o === dead ? [i] : []));
    expect(held.length).toBeGreaterThan(0);
    const atKill = load.done;
    const t0 = Date.now();
    await victim.kill('SIGKILL');
    const moved = await until(
      async () => {
        const o = await owners();
        return o.every((x) => x !== null && x !== dead) ? o : null;
      },
      60_000,
      "the dead projector's partitions to move",
      50,
    );
    const tookOverMs = Date.now() - t0;
    // Load goes on after the take-over too.
    const target = Math.max(atKill, load.done) + 30;
    await until(() => load.done >= target, 120_000, '30 more requests');
    await load.stop();
    console.log(
      `projector SIGKILL: partitions ${held.join(',')} moved in ${tookOverMs} ms (lease ${LEASE_MS} ms) to survivors ${moved.map((o) => o!.slice(0, 8)).join(',')}; ` +
        `${load.done} requests, statuses ${JSON.stringify(load.statuses())}`,
    );
    // A lease runs out after LEASE_MS and the survivors look every LEASE_MS / 3: a few seconds, with room for a loaded machine.
    expect(tookOverMs).toBeLessThan(LEASE_MS * 5);
    expect(load.statuses()).toEqual({ 200: load.done });
    await expectExact(load);
  });

  test('a projector stopped past its lease and resumed: its next batch is refused by the fence, nothing is applied twice, and it rejoins', async () => {
    // Back to 3 (the previous test killed one).
    while (live().length < 3) await startProjector();
    await until(balanced, 60_000, 'the 3 projectors to share the 6 partitions again', 100);
    const load = new Load(cluster, () => [apiUrl], secrets, 4);
    await until(() => load.done >= 10, 120_000, '10 requests');
    const refusal = /its batch was refused/;
    // After SIGCONT the stopped projector either commits a batch (refused by the fence) or renews its
    // leases first (and finds them gone): both are safe, and which comes first is the scheduler's
    // choice. Pause it until the fence has been seen at work, a few times at most.
    const paused = live()[0];
    const id = ownerIdOf(paused);
    let refused = 0;
    const cycles: string[] = [];
    for (let cycle = 1; cycle <= 5 && refused === 0; cycle++) {
      await until(async () => (await owners()).includes(id), 60_000, 'the paused projector to own a partition', 100);
      const before = { refused: paused.matching(refusal).length, lost: paused.matching(/"lost partition"/).length };
      paused.proc.kill('SIGSTOP');
      try {
        await until(
          async () => (await owners()).every((x) => x !== null && x !== id),
          60_000,
          'the others to take the paused projector partitions',
          50,
        );
        // The others apply events of its former partitions while it is stopped.
        const now = load.done;
        await until(() => load.done >= now + 15, 120_000, '15 requests while it is stopped');
      } finally {
        paused.proc.kill('SIGCONT');
      }
      await until(
        () => paused.matching(refusal).length > before.refused || paused.matching(/"lost partition"/).length > before.lost,
        60_000,
        'the resumed projector to notice it lost its partitions',
        50,
      );
      refused = paused.matching(refusal).length - before.refused;
      cycles.push(refused ? 'batch refused by the fence' : 'lease renewal failed first');
      // It rejoins: it holds partitions again once the others gave up their extras.
      await until(async () => (await owners()).includes(id) && (await balanced()), 60_000, 'the resumed projector to rejoin', 100);
    }
    await load.stop();
    console.log(
      `projector SIGSTOP past its lease: ${cycles.join('; ')}; ${load.done} requests, statuses ${JSON.stringify(load.statuses())}`,
    );
    expect(refused).toBeGreaterThan(0);
    expect(load.statuses()).toEqual({ 200: load.done });
    await expectExact(load);
  });

  test('Redis flushed under the projectors: every partition rebuilds, /readyz is 503 until it has, then 200, and the read models equal a replay', async () => {
    const load = new Load(cluster, () => [apiUrl], secrets, 4);
    await until(() => load.done >= 30, 120_000, '30 requests');
    await load.stop();
    // The store's truth (the projectors may still be applying the last debits).
    const expected = await Promise.all(
      wss.map(async (ws) => DEPOSIT - (await cluster.debitsOf(ws)).reduce((s, d) => s + BigInt(d.amountNanoUsd), 0n)),
    );
    await until(async () => (await fetch(`${apiUrl}/readyz`)).status === 200, 30_000, '/readyz 200 before the flush');

    expect(await flushPrefix(TEST_REDIS_URL, cluster.prefix)).toBeGreaterThan(0);
    const notReady = await until(
      async () => {
        const r = await fetch(`${apiUrl}/readyz`);
        return r.status === 503 ? ((await r.json()) as { checks: Record<string, string> }) : null;
      },
      10_000,
      '/readyz 503 after the flush',
      5,
    );
    const t0 = Date.now();
    await until(async () => (await fetch(`${apiUrl}/readyz`)).status === 200, 120_000, '/readyz 200 after the rebuild', 20);
    // Ready means rebuilt: the balances read right then are the store's.
    const after = await Promise.all(wss.map((ws) => getBalance(cluster.rm, ws)));
    console.log(`Redis flushed: /readyz said ${JSON.stringify(notReady.checks)}, ready again after ${Date.now() - t0} ms`);
    expect(after.map((b) => b.balance)).toEqual(expected);
    await until(balanced, 60_000, 'every partition held again', 100);
    // And the service answers requests again.
    const again = await cluster.infer(apiUrl, secrets[0]);
    expect(again.status).toBe(200);
    load.results.push({ ...again, ws: 0 });
    await expectExact(load);
  });
});
