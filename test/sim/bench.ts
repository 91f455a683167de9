import Redis from 'ioredis';
import { RedisPool } from './redis-gate';
import { runSchedule } from './schedule';
import * as mode from './sim-mode';
import { realTimers } from './sim-mode';

/**
 * npx tsx test/sim/bench.ts FROM TO: runs seeds FROM..TO one after another in this process and
 * prints, per seed, its result, steps and wall time, then the totals and the process's CPU time
 * (docs/BENCHMARKS.md, "The simulator"). The first schedule of a process also pays for the JIT.
 */
async function main(): Promise<void> {
  mode.install();
  const admin = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
  await admin.connect();
  const pool = new RedisPool();
  const env = { pool, admin, prefixBase: `sim:bench:${process.pid}:` };
  const from = Number(process.argv[2] ?? '1');
  const to = Number(process.argv[3] ?? String(from + 9));
  const cpu0 = process.cpuUsage();
  const t0 = realTimers.dateNow();
  let steps = 0;
  for (let seed = from; seed <= to; seed++) {
    const t = realTimers.dateNow();
    const r = await runSchedule(seed, env);
    steps += r.steps;
    process.stdout.write(`seed ${seed}: ${r.ok ? 'ok' : r.failure!.invariant}, ${r.steps} steps, ${realTimers.dateNow() - t} ms\n`);
  }
  const wall = realTimers.dateNow() - t0;
  const cpu = process.cpuUsage(cpu0);
  const n = to - from + 1;
  process.stdout.write(
    `${n} schedules, ${steps} steps, ${wall} ms wall, ${Math.round((cpu.user + cpu.system) / 1000)} ms CPU: ${((n / wall) * 60000).toFixed(1)} schedules a minute, ${(steps / n).toFixed(0)} steps and ${((cpu.user + cpu.system) / 1000 / n).toFixed(0)} ms CPU each\n`,
  );
  await pool.close();
  admin.disconnect();
  process.exit(0);
}

void main();
