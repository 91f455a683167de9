/**
 * Rebuilds next to a live runner: one at a time per projection, the live runner keeps committing,
 * nothing is lost across the switch-over (even on an idle system), and a killed rebuild's partial
 * generation is removed.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { EventStore, ReadAllOptions } from '../../../src/platform/eventstore/port';
import { createLogger } from '../../../src/platform/log';
import { rebuildProjection, RebuildRunning, rebuildStatus } from '../../../src/platform/projections/rebuild';
import { ProjectionRunner } from '../../../src/platform/projections/runner';
import { projectionEnv, ProjectionEnv } from '../../support/fixtures/env';
import { patience, sleep, until } from '../../support/wait';
import { appendFx, fxExpected, fxLedger, fxSnapshot } from '../../support/fixtures/projections';
import { TEST_REDIS_URL } from '../../support/redis';
import { BUNDLE_NODE_PATH, bundleChild } from '../../support/child-process';

let env: ProjectionEnv;
beforeEach(() => {
  env = projectionEnv();
});
afterEach(async () => {
  await env.dispose();
});

async function modelMatchesStore(): Promise<boolean> {
  const { gen: _g, ...rest } = await fxSnapshot(env.redis, env.ks);
  return isDeepStrictEqual(rest, fxExpected(await env.store.readAll()));
}

/** The store, but every readAll waits until `release()`: a rebuild that stays in progress. */
function gatedStore(store: EventStore): { store: EventStore; release(): void } {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => (open = r));
  const gated = Object.create(store) as EventStore;
  gated.readAll = async (opts?: ReadAllOptions) => {
    await gate;
    return store.readAll(opts);
  };
  return { store: gated, release: () => open() };
}

/** The store as it was at position `upTo`: a rebuild that read its last batch before later appends. */
function storeUpTo(store: EventStore, upTo: bigint): EventStore {
  const capped = Object.create(store) as EventStore;
  capped.headPosition = async () => upTo;
  capped.readAll = async (opts?: ReadAllOptions) => (await store.readAll(opts)).filter((e) => e.position <= upTo);
  return capped;
}

function runnerWith(opts: { notifications?: boolean } = {}): ProjectionRunner {
  return new ProjectionRunner({
    store: env.store,
    redis: env.connect(),
    ks: env.ks,
    projections: [fxLedger()],
    batchSize: 50,
    log: createLogger('silent'),
    ...(opts.notifications ? { notifications: env.connect() } : {}),
  });
}

describe('rebuilds next to a live runner', () => {
  test('a second rebuild of one projection is refused with the running one’s progress while the live runner keeps committing', async () => {
    const runner = runnerWith();
    await runner.start();
    try {
      await appendFx(env.store, 200, 20);
      expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
      const slow = gatedStore(env.store);
      const first = rebuildProjection({ store: slow.store, redis: env.connect(), ks: env.ks, projection: fxLedger() });
      await until(async () => (await rebuildStatus(env.redis, env.ks, 'fx-ledger')) !== null, 5000, 'the lock');
      const second = await rebuildProjection({ store: env.store, redis: env.connect(), ks: env.ks, projection: fxLedger() }).catch(
        (e) => e,
      );
      expect(second).toBeInstanceOf(RebuildRunning);
      const progress = (second as RebuildRunning).progress;
      expect(progress).toMatchObject({ name: 'fx-ledger', generation: expect.stringMatching(/^\d+$/), position: '0', head: '200' });
      expect((second as Error).message).toMatch(/already running \(generation \d+, position 0 of 200/);
      // another projection is not blocked by it
      await rebuildProjection({ store: env.store, redis: env.connect(), ks: env.ks, projection: fxLedger('fx-other') });

      // the live runner commits while the rebuild is in progress
      await appendFx(env.store, 60, 6);
      expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
      expect(await env.redis.get(env.ks.active('fx-ledger'))).toBeNull();
      expect(await modelMatchesStore()).toBe(true);

      slow.release();
      const done = await first;
      expect(done.gen).toBe(progress.generation);
      expect(await env.redis.get(env.ks.active('fx-ledger'))).toBe(done.gen);
      expect(await rebuildStatus(env.redis, env.ks, 'fx-ledger')).toBeNull();
      await until(modelMatchesStore, 5000, 'the model');
      // the lock is released: the next rebuild runs
      await rebuildProjection({ store: env.store, redis: env.connect(), ks: env.ks, projection: fxLedger() });
    } finally {
      await runner.stop();
    }
  });

  test.each([
    ['with the switch announcement', true],
    ['without it (the runner watches Redis)', false],
  ])('a rebuild that switches behind an idle live runner is caught up at once, %s', async (_label, notifications) => {
    await appendFx(env.store, 150, 15);
    const runner = runnerWith({ notifications });
    await runner.start();
    try {
      const head = await env.store.headPosition();
      expect(await runner.waitFor(head, patience(5000))).toBe(true);
      // The rebuild read up to head − 30; the live runner already applied the last 30 events to the
      // old generation. After the switch nothing new is appended: only the runner can close the gap.
      await rebuildProjection({ store: storeUpTo(env.store, head - 30n), redis: env.connect(), ks: env.ks, projection: fxLedger() });
      const gen = await env.redis.get(env.ks.active('fx-ledger'));
      expect(gen).not.toBeNull();
      await until(modelMatchesStore, 2000, 'the new generation to be caught up');
      expect((await fxSnapshot(env.redis, env.ks)).checkpoint).toBe(head.toString());
    } finally {
      await runner.stop();
    }
  });

  test('a rebuild catches up with a busy live runner before switching: readers never go back in time', async () => {
    await appendFx(env.store, 300, 30);
    const runner = runnerWith({ notifications: true });
    await runner.start();
    let writing = true;
    // Busy, but never faster than the rebuilds: every rebuild reads the whole log, and a writer with
    // no bound (even at 5 events every 50 ms) grew it faster than a rebuild read it when two test
    // runs shared the 2 cores, so the rebuilds never caught up. Each rebuild gets up to 20 appends of
    // 5 events, one every 50 ms: on a quiet machine that is the whole rebuild, switch-over included;
    // on a busy one the writes land during the rebuild and it still converges.
    let allowance = 0;
    const writer = (async () => {
      while (writing) {
        if (allowance > 0) {
          allowance--;
          await appendFx(env.store, 5, 5);
        }
        await sleep(50);
      }
    })();
    // Cleared in finally and never rejecting: when the test fails or times out on a busy machine, a
    // watcher left running read a closed Redis in the next test file and crashed the whole jest run.
    let watcher: NodeJS.Timeout | undefined;
    try {
      const rebuildRedis = env.connect();
      const observed: bigint[] = [];
      watcher = setInterval(() => {
        fxSnapshot(env.redis, env.ks)
          .then((s) => observed.push(BigInt(s.checkpoint ?? '0')))
          .catch(() => undefined);
      }, 20);
      for (let i = 0; i < 5; i++) {
        allowance = 20;
        await rebuildProjection({ store: env.store, redis: rebuildRedis, ks: env.ks, projection: fxLedger(), batchSize: 100 });
      }
      clearInterval(watcher);
      writing = false;
      await writer;
      expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
      await until(modelMatchesStore, 5000, 'the model');
      // the active checkpoint readers saw never decreased across five switch-overs
      const decreases = observed.filter((p, i) => i > 0 && p < observed[i - 1]);
      expect(observed.length).toBeGreaterThan(10);
      expect(decreases).toEqual([]);
    } finally {
      clearInterval(watcher);
      writing = false;
      await writer;
      await runner.stop();
    }
  });

  test('a killed rebuild leaves no partial generation behind', async () => {
    await appendFx(env.store, 400, 40);
    const runner = runnerWith();
    await runner.start();
    try {
      expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
      // A bundle (test/support/child-process.ts): under tsx the child's start alone took over 90 s at load 14.
      const child = spawn(process.execPath, bundleChild(resolve(__dirname, '../../support/fixtures/rebuild-child.ts')).args, {
        env: {
          ...process.env,
          NODE_PATH: BUNDLE_NODE_PATH,
          DB_FILE: env.dbFile,
          REDIS_URL: TEST_REDIS_URL,
          REDIS_PREFIX: env.prefix,
          LOCK_TTL_MS: '1000',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await until(() => /progress (\d+)\n(.|\n)*progress/.test(out), 20_000, 'the child to make progress');
      const gen = (await rebuildStatus(env.redis, env.ks, 'fx-ledger'))!.generation;
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const partial = await env.redis.keys(`${env.ks.genPrefix('fx-ledger', gen)}*`);
      expect(partial.length).toBeGreaterThan(0);
      expect(await env.redis.get(env.ks.active('fx-ledger'))).toBeNull();
      // the lock runs out; the live runner removes the generation nobody will finish
      await until(
        async () => (await env.redis.keys(`${env.ks.genPrefix('fx-ledger', gen)}*`)).length === 0,
        5000,
        'the partial generation to go',
      );
      expect(await env.redis.smembers(env.ks.building('fx-ledger'))).toEqual([]);
      expect(await modelMatchesStore()).toBe(true);
      // and the next rebuild runs
      const next = await rebuildProjection({ store: env.store, redis: env.connect(), ks: env.ks, projection: fxLedger() });
      expect(Number(next.gen)).toBeGreaterThan(Number(gen));
    } finally {
      await runner.stop();
    }
  });
});
