import Redis from 'ioredis';
import { RedisPool } from '../redis-gate';
import { runSchedule, type RunEnv } from '../schedule';
import * as mode from '../sim-mode';

/**
 * Seeds of the simulator (npm run sim -- --seed S) that found a defect, replayed here on the real
 * Redis. A seed replays the same schedule only with the simulator's code of its commit: a change to
 * the simulator (a new fault, another draw) changes what a seed does, so re-find the seed
 * (npm run sim:swarm) and update it with the change (docs/TESTING.md).
 */

let env: RunEnv;
beforeAll(async () => {
  mode.install();
  const admin = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
  await admin.connect();
  env = { pool: new RedisPool(), admin, prefixBase: `simtest:${process.pid}:` };
});
afterAll(async () => {
  await env.pool.close();
  env.admin.disconnect();
});

const cases: Array<[number, string]> = [
  // An InferenceRequested whose append landed but whose acknowledgement was lost: the hold was
  // released as if it had not, and the request stayed open for ever (the sweeper finds requests by
  // their holds). src/inference/usecases/engine.ts settleUnconfirmed; without it this seed fails
  // every-request-closed. (The first defect found, seed 1009 of an earlier simulator, billing a
  // caller who gave up, is kept as the planted bug billed-output-not-received: its seed moved.)
  [13, 'a request whose InferenceRequested acknowledgement was lost is closed'],
  // A projector whose runner failed to start kept renewing the partition's lease, and nobody
  // applied that partition again (src/platform/projections/partitioned-projector.ts). Found by
  // seed 3 before the simulator's lease change; not yet re-checked that it fails without the fix.
  [3, 'a partition left leased by a runner that never started'],
];

test.each(cases)('seed %i (%s) passes', async (seed) => {
  const r = await runSchedule(seed, env);
  if (!r.ok) throw new Error(`${r.failure!.invariant}: ${r.failure!.message}\n${r.trace.slice(-40).join('\n')}`);
  expect(r.ops).toBeGreaterThanOrEqual(50);
});

test('a seed run twice gives the same trace hash, also after a schedule that failed', async () => {
  const a = await runSchedule(2, env);
  const b = await runSchedule(2, env);
  expect(a.steps).toBeGreaterThan(100);
  expect(b.hash).toBe(a.hash);
  // Seed 29 fails (no-hold-left, an open finding): nothing it left running may reach the next schedule.
  const failing = await runSchedule(29, env);
  expect(failing.ok).toBe(false);
  const c = await runSchedule(2, env);
  expect(c.hash).toBe(a.hash);
});
