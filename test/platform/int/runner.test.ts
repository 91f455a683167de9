import { Redis } from 'ioredis';
import { createLogger } from '../../../src/platform/log';
import type { RecordedEvent } from '../../../src/platform/eventstore/port';
import type { Projection, Reactor } from '../../../src/platform/projections/projection';
import { rebuildProjection } from '../../../src/platform/projections/rebuild';
import { ProjectionRunner } from '../../../src/platform/projections/runner';
import { projectionStatus } from '../../../src/platform/projections/status';
import { projectionEnv, ProjectionEnv } from '../../support/fixtures/env';
import { sleep, until, patience } from '../../support/wait';
import { appendFx, fxEvents, fxExpected, fxLedger, fxSnapshot, recordingReactor } from '../../support/fixtures/projections';
import { TEST_REDIS_URL } from '../../support/redis';

let env: ProjectionEnv;
beforeEach(() => {
  env = projectionEnv();
});
afterEach(async () => {
  await env.dispose();
});

async function expectModelMatchesStore(name = 'fx-ledger') {
  const all = await env.store.readAll();
  const snap = await fxSnapshot(env.redis, env.ks, name);
  const { gen: _gen, ...rest } = snap;
  expect(rest).toEqual(fxExpected(all));
  expect(Object.values(snap.applied).filter((v) => v !== '1')).toEqual([]);
}

/**
 * A connection in MONITOR mode. On a busy shared Redis, other clients' command lines can arrive in
 * the same read as MONITOR's "+OK", before ioredis has switched the connection to monitor mode: it
 * takes them for replies and emits "Command queue state error" (unhandled, that failed the file).
 * Those lines come before the marker `monitorConnection` waits for, so they are not needed: the
 * error is ignored; any other error fails the open.
 */
async function openMonitor(): Promise<Redis> {
  const mon = new Redis(TEST_REDIS_URL, { monitor: true, lazyConnect: false });
  const state: { monitoring: boolean; failure: Error | null } = { monitoring: false, failure: null };
  mon.once('monitoring', () => (state.monitoring = true));
  mon.on('error', (err: Error) => {
    if (!/Command queue state error/.test(err.message)) state.failure ??= err;
  });
  await until(() => state.monitoring || state.failure !== null, 10_000, 'MONITOR to start');
  if (state.failure) {
    mon.disconnect();
    throw state.failure;
  }
  return mon;
}

/** Every command the given connection sends, as Redis executes them (MONITOR). */
async function monitorConnection(target: Redis): Promise<{ commands: string[][]; mark(marker: string): Promise<void>; stop(): void }> {
  const mon = await openMonitor();
  const addr = /addr=(\S+)/.exec(String(await target.client('INFO')))![1];
  const commands: string[][] = [];
  mon.on('monitor', (_t: string, args: string[], source: string) => {
    if (source.endsWith(addr)) commands.push(args.map(String));
  });
  // MONITOR is asynchronous: a marker sent on the connection shows it has seen everything before it.
  const mark = async (marker: string) => {
    await target.echo(marker);
    await until(() => commands.some((c) => c[0].toLowerCase() === 'echo' && c[1] === marker), 5000, `MONITOR to show ${marker}`);
  };
  await mark('monitor-ready');
  return {
    commands,
    mark,
    stop() {
      // MONITOR streams every command of the shared Redis (other test files, other runs): lines still
      // in flight when it disconnects reach a connection no longer in monitor mode, and ioredis emits
      // "Command queue state error" for them. After stop() that is expected and ignored.
      mon.removeAllListeners('monitor');
      mon.on('error', () => undefined);
      mon.disconnect();
    },
  };
}

/** Splits a command log into MULTI…EXEC blocks and the commands outside them. */
function transactions(commands: string[][]): { blocks: string[][][]; outside: string[][] } {
  const blocks: string[][][] = [];
  const outside: string[][] = [];
  let current: string[][] | null = null;
  for (const c of commands) {
    const cmd = c[0].toLowerCase();
    if (cmd === 'multi') current = [];
    else if (cmd === 'exec') {
      blocks.push(current ?? []);
      current = null;
    } else if (current) current.push(c);
    else outside.push(c);
  }
  return { blocks, outside };
}

describe('ProjectionRunner', () => {
  test('each batch commits the checkpoint and the changes in one MULTI', async () => {
    await appendFx(env.store, 120, 40); // history: caught up in one large batch
    const redis = env.connect();
    const monitor = await monitorConnection(redis);
    const runner = new ProjectionRunner({
      store: env.store,
      redis,
      ks: env.ks,
      projections: [fxLedger()],
      batchSize: 10,
      log: createLogger('silent'),
    });
    try {
      await runner.start();
      expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
      await runner.caughtUp; // the runner has moved on from catching up to its live subscription
      // live: one append of 35 events, taken in batches of at most 10
      await appendFx(env.store, 35, 35);
      expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
      await runner.stop();
      await monitor.mark('runner-stopped');
    } finally {
      monitor.stop();
    }
    const { blocks: withProgress, outside } = transactions(monitor.commands);
    // Each block announces the progress it leaves, inside the MULTI (no round trip of its own, and
    // only if it commits), as its last command; the announcement is never sent on its own.
    const announces = (c: string[]) => c[0].toLowerCase() === 'publish' && c[1] === env.ks.progressChannel;
    expect(withProgress.map((b) => b.filter(announces).length)).toEqual(withProgress.map(() => 1));
    expect(withProgress.every((b) => announces(b[b.length - 1]))).toBe(true);
    expect(outside.filter(announces)).toEqual([]);
    const blocks = withProgress.map((b) => b.slice(0, -1));
    const rmPrefix = env.ks.genPrefix('fx-ledger', '0');
    // Nothing the runner writes into the read model or its checkpoint happens outside a MULTI.
    // (The ready-marker script only reads the checkpoint; it writes the marker outside the model.)
    const marksReady = (c: string[]) => c[0].toLowerCase() === 'eval' && c.includes(env.ks.ready('fx-ledger'));
    // The batch guard only reads the checkpoint (it writes the guard key, and only to abort).
    const guards = (c: string[]) => c[0].toLowerCase() === 'eval' && c.includes(env.ks.commitGuard);
    const writesOutside = outside.filter(
      (c) => c.slice(1).some((a) => a.startsWith(rmPrefix)) && !/^(watch|mget|get)$/i.test(c[0]) && !marksReady(c) && !guards(c),
    );
    expect(writesOutside).toEqual([]);
    const cpKey = env.ks.checkpoint('fx-ledger', '0');
    const head = await env.store.headPosition();
    const checkpoints = blocks.map((b) => b.filter((c) => c[0].toLowerCase() === 'set' && c[1] === cpKey));
    // every block carries exactly one checkpoint write, as its last command
    expect(checkpoints.every((c) => c.length === 1)).toBe(true);
    expect(blocks.every((b) => b[b.length - 1][1] === cpKey)).toBe(true);
    expect(checkpoints[checkpoints.length - 1][0][2]).toBe(head.toString());
    // what a block announces is the checkpoint it commits
    expect(withProgress.map((b) => b[b.length - 1][2])).toEqual(checkpoints.map((c) => c[0][2]));
    // catch-up: the 120 historic events went in one block; live: 35 events in blocks of ≤ 10 events
    const appliedPerBlock = blocks.map((b) => b.filter((c) => c[0].toLowerCase() === 'zadd').length);
    expect(blocks[0].filter((c) => c[0].toLowerCase() === 'zadd').length).toBe(
      fxExpected(await env.store.readAll({ maxCount: 120 })).positions.length,
    );
    const live = blocks.slice(1);
    expect(live.length).toBeGreaterThanOrEqual(4);
    const livePositions = live.map((b) => Number(b[b.length - 1][2]));
    expect(livePositions).toEqual([...livePositions].sort((a, b) => a - b));
    expect(Math.max(...appliedPerBlock.slice(1))).toBeLessThanOrEqual(10);
    // each block was guarded by a WATCH of the active pointer, the checkpoint and the guard key,
    // then the guard script with what the block was built from, sent with it (no reply awaited
    // between them: one round trip), each block's guard expecting the checkpoint the one before left
    const watches = outside.filter((c) => c[0].toLowerCase() === 'watch');
    expect(watches.length).toBe(blocks.length);
    expect(watches[0]).toEqual(['watch', env.ks.active('fx-ledger'), cpKey, env.ks.commitGuard]);
    const guarded = outside.filter(guards);
    expect(guarded.map((c) => c[c.length - 1])).toEqual(['0', ...checkpoints.slice(0, -1).map((c) => c[0][2])]);
    const order = monitor.commands.filter((c) => /^(watch|multi|exec)$/i.test(c[0]) || guards(c)).map((c) => c[0].toLowerCase());
    expect(order.join(' ')).toBe(blocks.map(() => 'watch eval multi exec').join(' '));
    await expectModelMatchesStore();
  });

  test('events of types no projection handles still advance the checkpoint', async () => {
    const noise = Array.from({ length: 25 }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      type: 'FxNoise',
      data: {},
    }));
    await env.store.append('noise-1', noise, { expectedRevision: 'no_stream' });
    const runner = env.runner([fxLedger()]);
    await runner.start();
    expect(await runner.waitFor(25n, patience(5000))).toBe(true);
    const snap = await fxSnapshot(env.redis, env.ks);
    expect(snap.checkpoint).toBe('25');
    expect(snap.totals).toEqual({});
    const [status] = await projectionStatus(env.store, env.redis, env.ks, ['fx-ledger']);
    expect(status).toMatchObject({ checkpoint: '25', head: '25', lag: '0' });
  });

  test('a restarted runner resumes from its checkpoint without applying anything twice', async () => {
    const first = env.runner([fxLedger()], { batchSize: 7 });
    await first.start();
    await appendFx(env.store, 60, 6);
    expect(await first.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
    await first.stop();
    const before = await fxSnapshot(env.redis, env.ks);
    await appendFx(env.store, 40, 8);
    // nothing happens while no runner runs
    expect((await fxSnapshot(env.redis, env.ks)).checkpoint).toBe(before.checkpoint);
    const second = env.runner([fxLedger()], { batchSize: 7 });
    await second.start();
    expect(await second.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
    await expectModelMatchesStore();
  });

  test('an empty Redis rebuilds every projection from the store on start', async () => {
    await appendFx(env.store, 500, 100);
    const runner = env.runner([fxLedger(), fxLedger('fx-other')]);
    await runner.start();
    expect(await runner.waitFor(500n, patience(10_000))).toBe(true);
    await expectModelMatchesStore('fx-ledger');
    await expectModelMatchesStore('fx-other');
    // a catch-up from history is not live: live-only effects were skipped
    expect(await env.redis.get(env.ks.shared('fx', 'live-applies'))).toBeNull();
  });

  test('the runner stays correct when its Redis is emptied under it and it restarts', async () => {
    const runner = env.runner([fxLedger()]);
    await runner.start();
    await appendFx(env.store, 30, 10);
    expect(await runner.waitFor(30n, patience(5000))).toBe(true);
    await runner.stop();
    // FLUSH of this prefix only (the real Redis is shared)
    const keys = await env.redis.keys(`${env.prefix}*`);
    await env.redis.unlink(...keys);
    const again = env.runner([fxLedger()]);
    await again.start();
    expect(await again.waitFor(30n, patience(5000))).toBe(true);
    await expectModelMatchesStore();
  });

  test('rebuildProjection switches generation and drops the old one while the live runner keeps running', async () => {
    await appendFx(env.store, 400, 50);
    const runner = env.runner([fxLedger()], { batchSize: 5 });
    await runner.start();
    expect(await runner.waitFor(400n, patience(10_000))).toBe(true);
    expect(await env.redis.get(env.ks.active('fx-ledger'))).toBeNull(); // generation 0

    // keep appending while the rebuild runs (small batches make it take a while)
    let appending = true;
    let appended = 0;
    const writer = (async () => {
      while (appending) {
        await env.store.append(`fx-live-${appended % 4}`, fxEvents(3), { expectedRevision: 'any' });
        appended += 3;
        await sleep(2);
      }
    })();
    await until(() => appended > 0, 5000, 'the writer to start');
    const progress: bigint[] = [];
    const result = await rebuildProjection({
      store: env.store,
      redis: env.connect(),
      ks: env.ks,
      projection: fxLedger(),
      batchSize: 20,
      onProgress: (_n, _head, position) => progress.push(position),
    });
    // Some appends land after the switch, while the runner applies to the new generation.
    const atSwitch = appended;
    await until(() => appended >= atSwitch + 6, 5000, 'appends after the switch');
    appending = false;
    await writer;
    expect(appended).toBeGreaterThan(0);
    expect(result.gen).toBe('1');
    expect(result.events).toBeGreaterThanOrEqual(400);
    expect(progress.length).toBeGreaterThan(10);
    expect(await env.redis.get(env.ks.active('fx-ledger'))).toBe('1');
    // the old generation is gone
    expect(await env.redis.keys(`${env.ks.genPrefix('fx-ledger', '0')}*`)).toEqual([]);

    const head = await env.store.headPosition();
    expect(await runner.waitFor(head, patience(10_000))).toBe(true);
    await expectModelMatchesStore();
    expect(await env.redis.keys(`${env.ks.genPrefix('fx-ledger', '0')}*`)).toEqual([]);

    // and the runner keeps applying new events to the new generation
    await appendFx(env.store, 10, 10);
    expect(await runner.waitFor(await env.store.headPosition(), patience(5000))).toBe(true);
    await expectModelMatchesStore();
    expect((await fxSnapshot(env.redis, env.ks)).gen).toBe('1');
  });

  test('a failed rebuild leaves the active generation alone and drops its partial one', async () => {
    await appendFx(env.store, 100, 50);
    const runner = env.runner([fxLedger()]);
    await runner.start();
    expect(await runner.waitFor(100n, patience(5000))).toBe(true);
    await expect(
      rebuildProjection({
        store: env.store,
        redis: env.redis,
        ks: env.ks,
        projection: fxLedger('fx-ledger', { failOn: (e) => e.position === 71n }),
        batchSize: 10,
      }),
    ).rejects.toThrow(/refuses event 71/);
    expect(await env.redis.get(env.ks.active('fx-ledger'))).toBeNull();
    expect(await env.redis.keys(`${env.ks.genPrefix('fx-ledger', '1')}*`)).toEqual([]);
    await expectModelMatchesStore();
  });

  test('projectionStatus reports checkpoint, head and lag', async () => {
    await appendFx(env.store, 10, 5);
    let [s] = await projectionStatus(env.store, env.redis, env.ks, ['fx-ledger']);
    expect(s).toEqual({ name: 'fx-ledger', gen: '0', checkpoint: '0', head: '10', lag: '10' });
    const runner = env.runner([fxLedger()]);
    await runner.start();
    expect(await runner.waitFor(10n, patience(5000))).toBe(true);
    await runner.stop();
    await appendFx(env.store, 4, 4);
    [s] = await projectionStatus(env.store, env.redis, env.ks, ['fx-ledger']);
    expect(s).toEqual({ name: 'fx-ledger', gen: '0', checkpoint: '10', head: '14', lag: '4' });
  });

  test('waitFor resolves once the position is applied, or false on timeout', async () => {
    const runner = env.runner([fxLedger()]);
    await runner.start();
    expect(await runner.waitFor(0n, patience(0))).toBe(true);
    const started = Date.now();
    expect(await runner.waitFor(1n, 150)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    const waiting = runner.waitFor(3n, patience(5000));
    await appendFx(env.store, 3, 3);
    expect(await waiting).toBe(true);
    expect(runner.position).toBe(3n);
    // when it resolves, the read model already holds the event
    expect((await fxSnapshot(env.redis, env.ks)).checkpoint).toBe('3');
  });

  test('a projection whose apply throws does not advance; the runner retries with backoff', async () => {
    let failing = true;
    let attempts = 0;
    const projection = fxLedger('fx-ledger', {
      failOn: (e) => {
        if (e.position !== 6n) return false;
        attempts++;
        return failing;
      },
    });
    const runner = env.runner([projection], { batchSize: 1 });
    await runner.start();
    await appendFx(env.store, 10, 1);
    expect(await runner.waitFor(5n, patience(5000))).toBe(true);
    await until(() => attempts >= 1, 5000, 'the first attempt at event 6');
    const firstAttempt = Date.now();
    await until(() => attempts >= 3, 5000, 'two retries');
    // retried, but backing off (100, then 200 ms … not a hot loop)
    expect(Date.now() - firstAttempt).toBeGreaterThanOrEqual(250);
    expect((await fxSnapshot(env.redis, env.ks)).checkpoint).toBe('5');
    expect(runner.position).toBe(5n);
    expect(await runner.waitFor(6n, 0)).toBe(false);
    failing = false;
    expect(await runner.waitFor(10n, patience(10_000))).toBe(true);
    await expectModelMatchesStore();
  });

  test('stop() returns promptly even while the runner is backing off', async () => {
    let attempts = 0;
    const runner = env.runner([fxLedger('fx-ledger', { failOn: () => (attempts++, true) })]);
    await runner.start();
    await appendFx(env.store, 3, 3);
    // After 100, 200, 400, 800 and 1,600 ms of backoff the next wait is 3,200 ms: stop() must wake it,
    // not wait it out. (With the 800 ms wait and a 300 ms limit, a loaded machine could fail it: the
    // limit stays far below the wait and far above what stop() itself takes.)
    await until(() => attempts >= 6, 15_000, 'five retries');
    const started = Date.now();
    await runner.stop();
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  test('reactors run after the projections committed, and start at the head on first sight', async () => {
    await appendFx(env.store, 20, 10); // history the reactor must never act on
    const checkpointsSeen: string[] = [];
    const seen: RecordedEvent[] = [];
    const reactor: Reactor = {
      name: 'fx-reactor',
      handles: new Set(['FxCredited']),
      async react(e) {
        seen.push(e);
        checkpointsSeen.push((await fxSnapshot(env.redis, env.ks)).checkpoint);
      },
    };
    const runner = env.runner([fxLedger()], { reactors: [reactor], batchSize: 4 });
    await runner.start();
    expect(await env.redis.get(env.ks.reactorCheckpoint('fx-reactor'))).toBe('20');
    expect(await runner.waitFor(20n, patience(5000))).toBe(true);
    expect(seen).toEqual([]);
    await appendFx(env.store, 15, 5);
    const head = await env.store.headPosition();
    expect(await runner.waitFor(head, patience(5000))).toBe(true);
    const fresh = (await env.store.readAll({ fromPosition: 21n })).filter((e) => e.type === 'FxCredited');
    expect(seen.map((e) => e.id)).toEqual(fresh.map((e) => e.id));
    // each reaction saw its event already applied to the read model
    seen.forEach((e, i) => expect(BigInt(checkpointsSeen[i])).toBeGreaterThanOrEqual(e.position));
    expect(await env.redis.get(env.ks.reactorCheckpoint('fx-reactor'))).toBe(head.toString());

    // a rebuild never runs reactors
    const before = seen.length;
    await rebuildProjection({ store: env.store, redis: env.redis, ks: env.ks, projection: fxLedger() });
    // Whatever the rebuild could have set off is before an event the reactor ignores: wait for that one.
    const { position } = await env.store.append(
      'noise-after-rebuild',
      [{ id: '00000000-0000-4000-8000-00000000a001', type: 'FxNoise', data: {} }],
      {
        expectedRevision: 'no_stream',
      },
    );
    await until(
      async () => (await env.redis.get(env.ks.reactorCheckpoint('fx-reactor'))) === position.toString(),
      5000,
      'the reactor checkpoint',
    );
    expect(seen.length).toBe(before);
  });

  test('a long catch-up reads in parts of 1,000 events into one MULTI per 10,000; reactors behind see what they handle and reach the head', async () => {
    // 6,000 events: several reads, less than one batch. The last one is an FxNoise no one handles.
    await appendFx(env.store, 6000, 500);
    const head = await env.store.headPosition();
    expect((await env.store.readAll({ fromPosition: head }))[0].type).toBe('FxNoise');
    const reads: number[] = [];
    const readAll = env.store.readAll.bind(env.store);
    env.store.readAll = (opts) => (reads.push(opts?.maxCount ?? Infinity), readAll(opts));
    // Batched writes only (a few scripts per batch, whatever its events): nothing ends the batch early.
    const sums: Projection = {
      name: 'fx-sums',
      handles: new Set(['FxCredited', 'FxDebited']),
      apply(e, tx) {
        const d = e.data as { account: string; amount: string };
        tx.hincrby(tx.key('balance'), d.account, e.type === 'FxCredited' ? d.amount : `-${d.amount}`);
      },
    };
    // A reactor that was stopped at position 0 (a first-seen one would start at the head).
    await env.redis.set(env.ks.reactorCheckpoint('fx-reactor'), '0');
    const reactor = recordingReactor();
    const runner = env.runner([sums], { reactors: [reactor] });
    const multi = jest.spyOn((runner as unknown as { opts: { redis: Redis } }).opts.redis, 'pipeline');
    await runner.start();
    await runner.caughtUp;
    // Every checkpoint (the reactor's too) is at the head when the catch-up ends: the reactor's moved
    // past the trailing event it does not handle, with no second read of it by the live subscription.
    expect(runner.position).toBe(head);
    expect(reads.length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...reads)).toBeLessThanOrEqual(1_001);
    expect(multi).toHaveBeenCalledTimes(1);
    const all = await env.store.readAll();
    const expected: Record<string, string> = {};
    for (const e of all.filter((x) => x.type !== 'FxNoise')) {
      const d = e.data as { account: string; amount: string };
      expected[d.account] = String(BigInt(expected[d.account] ?? '0') + (e.type === 'FxCredited' ? 1n : -1n) * BigInt(d.amount));
    }
    expect(await env.redis.hgetall(env.ks.rm('fx-sums', '0', 'balance'))).toEqual(expected);
    expect(reactor.seen.map((e) => e.id)).toEqual(all.filter((e) => e.type === 'FxCredited').map((e) => e.id));
    expect(await env.redis.get(env.ks.reactorCheckpoint('fx-reactor'))).toBe(head.toString());
  });

  test('over a store that reads synchronously, a catch-up sends a batch while it builds the next one', async () => {
    await appendFx(env.store, 25_000, 2500); // three batches
    const seen: string[] = [];
    const readAll = env.store.readAll.bind(env.store);
    env.store.readAll = (opts) => (seen.push('read'), readAll(opts));
    const sums: Projection = {
      name: 'fx-sums',
      handles: new Set(['FxCredited']),
      apply(e, tx) {
        tx.hincrby(tx.key('total'), 'credited', (e.data as { amount: string }).amount);
      },
    };
    const runner = env.runner([sums]);
    const redis = (runner as unknown as { opts: { redis: Redis } }).opts.redis;
    const pipeline = redis.pipeline.bind(redis);
    jest.spyOn(redis, 'pipeline').mockImplementation(((...args: Parameters<Redis['pipeline']>) => {
      const m = pipeline(...args);
      const exec = m.exec.bind(m);
      // A batch's pipeline calls exec twice in one go (the first queues its MULTI's EXEC): one send.
      let sent = false;
      m.exec = ((...a: Parameters<typeof exec>) => (sent || seen.push('exec'), (sent = true), exec(...a))) as typeof m.exec;
      return m;
    }) as Redis['pipeline']);
    await runner.start();
    await runner.caughtUp;
    // The first batch took 10 reads (of 1,000); its MULTI went out before the second batch's 10 reads were done.
    const firstExec = seen.indexOf('exec');
    expect(seen.slice(0, firstExec).filter((s) => s === 'read').length).toBeLessThan(15);
    expect(seen.filter((s) => s === 'exec')).toHaveLength(3);
  });

  test('a catch-up batch ends early once its MULTI holds 3,000 commands (a projection queuing its own per event)', async () => {
    await appendFx(env.store, 6000, 500);
    const runner = env.runner([fxLedger()]); // five MULTI commands per applied event
    const multi = jest.spyOn((runner as unknown as { opts: { redis: Redis } }).opts.redis, 'pipeline');
    await runner.start();
    await runner.caughtUp;
    expect(runner.position).toBe(await env.store.headPosition());
    // 4,800 applied events, 24,000 commands: batches of one or a few reads (1,000 events: ≤ 5,000 commands each).
    expect(multi.mock.calls.length).toBeGreaterThanOrEqual(5);
    await expectModelMatchesStore();
  });

  test("a batch's reactors run side by side, each over the events in order", async () => {
    // fx-a's first reaction waits (up to 2 s) for fx-b to start: one after the other, it never does.
    let bStarted = () => undefined as void;
    const started = new Promise<void>((r) => (bStarted = r));
    let overlapped: boolean | null = null;
    const seen: Record<string, bigint[]> = { 'fx-a': [], 'fx-b': [] };
    const make = (name: string, react: (e: RecordedEvent) => Promise<void>): Reactor => ({
      name,
      handles: new Set(['FxCredited', 'FxDebited']),
      react,
    });
    const a = make('fx-a', async (e) => {
      if (overlapped === null) overlapped = await Promise.race([started.then(() => true), sleep(2000).then(() => false)]);
      seen['fx-a'].push(e.position);
    });
    const b = make('fx-b', async (e) => {
      bStarted();
      seen['fx-b'].push(e.position);
    });
    const runner = env.runner([fxLedger()], { reactors: [a, b], batchSize: 50 });
    await runner.start();
    await appendFx(env.store, 12, 12);
    const head = await env.store.headPosition();
    expect(await runner.waitFor(head, patience(10_000))).toBe(true);
    expect(overlapped).toBe(true);
    const handled = (await env.store.readAll()).filter((e) => e.type === 'FxCredited' || e.type === 'FxDebited').map((e) => e.position);
    expect(seen['fx-a']).toEqual(handled);
    expect(seen['fx-b']).toEqual(handled);
    expect(await env.redis.mget(env.ks.reactorCheckpoint('fx-a'), env.ks.reactorCheckpoint('fx-b'))).toEqual([
      head.toString(),
      head.toString(),
    ]);
  });

  test('a failing reactor is retried (at least once) without applying projections twice', async () => {
    let failures = 0;
    const seen: string[] = [];
    const reactor: Reactor = {
      name: 'fx-flaky',
      handles: new Set(['FxCredited']),
      async react(e) {
        if (failures < 2) {
          failures++;
          throw new Error('downstream unavailable');
        }
        seen.push(e.id);
      },
    };
    const runner = env.runner([fxLedger()], { reactors: [reactor] });
    await runner.start();
    await appendFx(env.store, 12, 12);
    const head = await env.store.headPosition();
    expect(await runner.waitFor(head, patience(10_000))).toBe(true);
    const credited = (await env.store.readAll()).filter((e) => e.type === 'FxCredited').map((e) => e.id);
    expect(seen).toEqual(credited);
    await expectModelMatchesStore();
  });

  test('a runner in a second process (or a second copy) cannot apply an event twice', async () => {
    const a = env.runner([fxLedger()], { batchSize: 3 });
    const b = env.runner([fxLedger()], { batchSize: 3 });
    await Promise.all([a.start(), b.start()]);
    const checkpoint = async () => BigInt((await env.redis.get(env.ks.checkpoint('fx-ledger', '0'))) ?? '0');
    for (let i = 0; i < 20; i++) {
      await appendFx(env.store, 5, 5);
      // one append at a time: both runners race for each one
      const head = await env.store.headPosition();
      await until(async () => (await checkpoint()) >= head, 10_000, 'the checkpoint to reach the append');
    }
    const head = await env.store.headPosition();
    await until(async () => (await fxSnapshot(env.redis, env.ks)).checkpoint === head.toString(), 10_000, 'both runners');
    await expectModelMatchesStore();
  });

  test('a recording reactor helper sees events in order', async () => {
    const r = recordingReactor();
    const runner = env.runner([], { reactors: [r] });
    await runner.start();
    await appendFx(env.store, 9, 3);
    expect(await runner.waitFor(9n, patience(5000))).toBe(true);
    expect(r.seen.map((e) => e.position)).toEqual([...r.seen.map((e) => e.position)].sort((x, y) => Number(x - y)));
  });

  test('with no projections and no reactors, waitFor follows the store head', async () => {
    await appendFx(env.store, 4, 4);
    const runner = env.runner([]);
    await runner.start();
    expect(await runner.waitFor(4n, patience(1000))).toBe(true);
    await appendFx(env.store, 2, 2);
    expect(await runner.waitFor(6n, patience(2000))).toBe(true);
  });
});
