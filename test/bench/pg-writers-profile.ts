/**
 * The writer side of (a2) alone, for `node --cpu-prof`: 50 writers x N single-event appends through
 * one store (lock-free by default; `--lock` for the old append lock). Prints appends/s and the
 * process's CPU per append. `node --cpu-prof --cpu-prof-dir /tmp/x --import tsx test/bench/pg-writers-profile.ts [N] [--lock]`
 */
import { PostgresEventStore } from '../../src/platform/eventstore/postgres';
import { createTestDatabase } from '../support/postgres';
import { event } from './bench-events';
import { OlderAppendStore } from './postgres-older-appends';

const admin = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

async function main() {
  const perWriter = Number(process.argv[2] ?? 200);
  const lock = process.argv.includes('--lock');
  const writers = 50;
  const db = await createTestDatabase('prof', { adminUrl: admin });
  const u = new URL(db.url);
  try {
    const opts = { connectionString: u.toString(), poolSize: 4 };
    const store = lock ? new OlderAppendStore({ ...opts, append: 'locked' }) : new PostgresEventStore(opts);
    await store.ping();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        let expected: bigint | 'no_stream' = 'no_stream';
        for (let i = 0; i < perWriter; i++) {
          expected = (await store.append(`w-${w}`, [event(i)], { expectedRevision: expected })).nextExpectedRevision;
        }
      }),
    );
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const n = writers * perWriter;
    console.log(
      `${lock ? 'locked' : 'lock-free'}: ${Math.round((n * 1000) / ms)} appends/s, node CPU ${((cpu.user + cpu.system) / n).toFixed(1)} µs/append`,
    );
    await store.close();
  } finally {
    await db.drop();
  }
}
void main();
