/**
 * Crash safety: a projection runner in a child process is SIGKILLed at random points 50 times
 * while events stream into the store. Afterwards its read model must equal a from-scratch replay
 * of the store, with no event applied twice and none skipped.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { SqliteEventStore } from '../../../src/eventstore/sqlite';
import { Keyspace } from '../../../src/projections/keyspace';
import { rebuildProjection } from '../../../src/projections/rebuild';
import { sleep } from '../../support/fixtures/env';
import { fxEvents, fxExpected, fxLedger, fxSnapshot } from '../../support/fixtures/projections';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

const KILLS = Number(process.env.KILL_TEST_KILLS ?? 50);
const CHILD = resolve(__dirname, '../../support/fixtures/runner-child.ts');

jest.setTimeout(180_000);

const dir = mkdtempSync(join(tmpdir(), 'tollgate-kill-'));
const dbFile = join(dir, 'events.sqlite');
const prefix = uniquePrefix('test');
const replayPrefix = uniquePrefix('test');
const ks = new Keyspace(prefix);
let store: SqliteEventStore;
let redis: Redis;
const children = new Set<ChildProcess>();

beforeAll(() => {
  store = new SqliteEventStore({ file: dbFile });
  redis = new Redis(TEST_REDIS_URL);
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await cleanupPrefix(TEST_REDIS_URL, prefix);
  await cleanupPrefix(TEST_REDIS_URL, replayPrefix);
  redis.disconnect();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Child {
  proc: ChildProcess;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

function startRunner(): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, DB_FILE: dbFile, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, BATCH_SIZE: '20' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const ready = new Promise<void>((res) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('ready')) res();
    });
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    proc.once('exit', (code, signal) => {
      children.delete(proc);
      res({ code, signal });
    }),
  );
  return { proc, ready, exited, stderr: () => err };
}

async function checkpoint(): Promise<bigint> {
  const gen = (await redis.get(ks.active('fx-ledger'))) ?? '0';
  return BigInt((await redis.get(ks.checkpoint('fx-ledger', gen))) ?? '0');
}

/** Resolves once the checkpoint moves past `from` (the runner is streaming), or after `ms`. */
async function progressPast(from: bigint, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && (await checkpoint()) <= from) await sleep(2);
}

test(`the read model survives ${KILLS} SIGKILLs of the runner with nothing applied twice`, async () => {
  const started = Date.now();
  // The parent streams events in: 1–4 per append, every couple of milliseconds.
  let appending = true;
  let appends = 0;
  const seq = { i: 0 };
  const writer = (async () => {
    while (appending) {
      const n = 1 + Math.floor(Math.random() * 4);
      await store.append(`fx-${Math.floor(Math.random() * 10)}`, fxEvents(n, seq), { expectedRevision: 'any' });
      appends++;
      await sleep(1 + Math.floor(Math.random() * 3));
    }
  })();

  let killsBeforeReady = 0;
  let killsWhileProgressing = 0;
  for (let k = 0; k < KILLS; k++) {
    const before = await checkpoint();
    const child = startRunner();
    if (k % 5 === 0) {
      // anywhere from spawn on, often before the runner even started
      const outcome = await Promise.race([child.ready.then(() => 'ready'), sleep(Math.random() * 900).then(() => 'timer')]);
      if (outcome === 'timer') killsBeforeReady++;
    } else if (k % 5 === 1) {
      // just after start(): loading state, catching up with what arrived while it was down
      await Promise.race([child.ready, child.exited]);
      await sleep(Math.random() * 20);
    } else {
      // while it streams: once it has committed something, at a random moment soon after
      await Promise.race([child.ready, child.exited]);
      await progressPast(before, 5000);
      await sleep(Math.random() * 150);
    }
    child.proc.kill('SIGKILL');
    const { signal, code } = await child.exited;
    if (signal !== 'SIGKILL') throw new Error(`runner child exited by itself (code ${code}): ${child.stderr()}`);
    if ((await checkpoint()) > before) killsWhileProgressing++;
  }

  appending = false;
  await writer;
  const head = await store.headPosition();

  // A last runner catches up with everything.
  const last = startRunner();
  const deadline = Date.now() + 60_000;
  while ((await checkpoint()) < head) {
    if (Date.now() > deadline) throw new Error(`runner did not catch up: ${await checkpoint()} < ${head}; ${last.stderr()}`);
    await sleep(20);
  }
  last.proc.kill('SIGKILL');
  await last.exited;

  // A from-scratch replay of the same store into a separate prefix.
  const replayKs = new Keyspace(replayPrefix);
  await rebuildProjection({ store, redis, ks: replayKs, projection: fxLedger() });
  const survived = await fxSnapshot(redis, ks);
  const replayed = await fxSnapshot(redis, replayKs);
  const all = await store.readAll();

  const doubles = Object.entries(survived.applied).filter(([, v]) => v !== '1');
  const { gen: _a, ...survivedModel } = survived;
  const { gen: _b, ...replayedModel } = replayed;
  console.log(
    `kill test: ${all.length} events in ${appends} appends, ${KILLS} SIGKILLs ` +
      `(${killsBeforeReady} before the runner was ready, ${killsWhileProgressing} after it had committed progress), ` +
      `${doubles.length} events applied twice, ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  expect(doubles).toEqual([]);
  expect(survivedModel).toEqual(replayedModel);
  expect(survivedModel).toEqual(fxExpected(all));
  expect(survived.checkpoint).toBe(head.toString());
  // most kills hit a runner in the middle of its work (the rest: during start-up)
  expect(killsWhileProgressing).toBeGreaterThanOrEqual(KILLS / 2);
});
