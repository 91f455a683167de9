import { execFile } from 'node:child_process';
import { join } from 'node:path';
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
  // The simulator's own: when the faults stopped it expired a dead projector's leases but left its
  // heartbeat in the members set, so the live projectors took a smaller fair share and a partition
  // stayed unowned (test/sim/cluster.ts expireLeasesNow). Without the heartbeat's removal this seed
  // fails no-hold-left (so did 12 of seeds 1000–1103, and seed 3 balance-equals-ledger on main).
  [1018, 'a dead projector no longer counts among the members once its leases are gone'],
  // (Seed 3, a projector whose runner failed to start keeping the partition's lease, passes
  // without its fix since the simulator's lease change: the defect is the planted bug
  // runner-start-keeps-lease now, test/sim/planted/bugs.ts.)
];

test.each(cases)('seed %i (%s) passes', async (seed) => {
  const r = await runSchedule(seed, env);
  if (!r.ok) throw new Error(`${r.failure!.invariant}: ${r.failure!.message}\n${r.trace.slice(-40).join('\n')}`);
  expect(r.ops).toBeGreaterThanOrEqual(50);
});

/** The trace hash `npm run sim -- --seed S` prints, run in a process of its own. */
function hashInOwnProcess(seed: number): Promise<string> {
  const root = join(__dirname, '../../..');
  return new Promise((resolve, reject) => {
    execFile(
      join(root, 'node_modules/.bin/tsx'),
      ['test/sim/main.ts', '--seed', String(seed)],
      { cwd: root, maxBuffer: 64 << 20 },
      (_err, stdout) => {
        const m = /trace hash ([0-9a-f]+)/.exec(stdout);
        if (m) resolve(m[1]);
        else reject(new Error(`no trace hash in: ${stdout.slice(-2000)}`));
      },
    );
  });
}

// No recorded hash: a seed's hash moves with the code. What must hold is that it is the same in
// every run of one commit: twice in a process, after other schedules (one that failed, if any of
// the next seeds fails: nothing it left running may reach the next schedule), and in another
// process against another (secrets, ids and times all come from the seed).
test('a seed run twice gives the same trace hash, in one process after other schedules and in another process', async () => {
  const a = await runSchedule(2, env);
  const b = await runSchedule(2, env);
  expect(a.steps).toBeGreaterThan(100);
  expect(b.hash).toBe(a.hash);
  for (let seed = 29; seed < 34; seed++) if (!(await runSchedule(seed, env)).ok) break;
  const c = await runSchedule(2, env);
  expect(c.hash).toBe(a.hash);
  // Two processes of npm run sim (tsx: jest's transpiled code interleaves differently, so its hash differs from theirs).
  const [p, q] = await Promise.all([hashInOwnProcess(2), hashInOwnProcess(2)]);
  expect(q).toBe(p);
});
