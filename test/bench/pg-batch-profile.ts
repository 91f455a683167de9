/**
 * Where one group-commit batch's time goes (issue 19 target 4): a batch of N single-event appends to
 * N streams, sent the way the store sends it, timed as function call and COMMIT separately, and with
 * auto_explain's nested plans (decisions vs INSERT) at NOTICE. `npx tsx test/bench/pg-batch-profile.ts [N] [batches]`.
 */
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { Client } from 'pg';
import { PostgresEventStore } from '../../src/platform/eventstore/postgres';
import { createTestDatabase } from '../support/postgres';
import { event } from './bench-events';

const admin = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** CPU time (user + system, ms) the server process `pid` has used: /proc/<pid>/stat, in clock ticks of 10 ms. */
function backendCpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

async function main() {
  const n = Number(process.argv[2] ?? 50);
  const batches = Number(process.argv[3] ?? 40);
  const db = await createTestDatabase('prof', { adminUrl: admin });
  const u = new URL(db.url);
  try {
    const s = new PostgresEventStore({ connectionString: u.toString() });
    await s.ping();
    await s.close();
    let c = new Client({ connectionString: u.toString() });
    await c.connect();
    // 20,000 events already there (negative positions, never the store's) and analyzed: the plans are
    // the ones a table in use gets (on an empty table the id lookup is planned as a sequential scan).
    await c.query(`INSERT INTO tollgate_events (position, event_id, stream_id, stream_revision, type, data, metadata, created)
      SELECT -g, gen_random_uuid()::text, 'fill-' || (g % 500), g / 500, 'T', '{}', '{}', now() FROM generate_series(1, 20000) g`);
    await c.query('ANALYZE tollgate_events');
    // --set=<setting>: e.g. plan_cache_mode=force_generic_plan on the function, to measure a function-level setting.
    const setting = process.argv.find((a) => a.startsWith('--set='))?.slice(6);
    if (setting) {
      const [k, v] = setting.split('=');
      await c.query(`ALTER FUNCTION tollgate_append_together SET ${k} = ${v}`);
    }
    const rev: number[] = Array(n).fill(-1);
    const args = (lock: boolean) => {
      const ids: string[] = [],
        types: string[] = [],
        data: string[] = [],
        meta: string[] = [];
      for (let i = 0; i < n; i++) {
        const e = event(i);
        ids.push(e.id);
        types.push(e.type);
        data.push(JSON.stringify(e.data));
        meta.push(JSON.stringify(e.metadata));
      }
      return [
        Array.from({ length: n }, (_, i) => `s-${i}`),
        rev.map((r) => (r < 0 ? 'no_stream' : String(r))),
        Array.from({ length: n }, (_, i) => i),
        Array(n).fill(1),
        ids,
        types,
        ...(together ? [`[${data.join(',')}]`, `[${meta.join(',')}]`] : [data, meta]),
        new Date(),
        ...(together ? [] : [lock]),
      ];
    };
    // Version 3's call, or (--together) version 4's.
    const together = process.argv.includes('--together');
    const sqlText = together
      ? 'SELECT ord, ok, revision, pos FROM tollgate_append_together($1, $2, $3, $4, $5, $6, $7, $8, $9)'
      : 'SELECT ord, ok, revision, pos FROM tollgate_append_grouped($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)';
    const t = () => performance.now();
    const fn: number[] = [],
      commit: number[] = [],
      auto: number[] = [];
    for (let b = 0; b < batches; b++) {
      // A connection plans the decisions once; plan them against a table that is not empty (as the bench's pools do).
      if (b === Math.max(5, batches - 20)) {
        await c.end();
        c = new Client({ connectionString: u.toString() });
        await c.connect();
        fn.length = commit.length = auto.length = 0;
      }
      await c.query('BEGIN');
      let t0 = t();
      const r = await c.query(sqlText, args(false));
      fn.push(t() - t0);
      t0 = t();
      await c.query('COMMIT');
      commit.push(t() - t0);
      if (!r.rows.every((x) => x.ok)) throw new Error('conflict');
      for (let i = 0; i < n; i++) rev[i]++;
      t0 = t();
      await c.query(sqlText, args(false));
      auto.push(t() - t0);
      for (let i = 0; i < n; i++) rev[i]++;
    }
    // Server CPU per batch: the backend's own CPU over more batches on this connection (ticks are 10 ms).
    const pid = Number((await c.query('SELECT pg_backend_pid() AS p')).rows[0].p);
    const cpuBatches = Number(process.argv.find((a) => a.startsWith('--cpu='))?.slice(6) ?? 200);
    // --perf=<file>: perf record the server process meanwhile (needs perf and the rights to attach).
    const perfOut = process.argv.find((a) => a.startsWith('--perf='))?.slice(7);
    const perf = perfOut ? spawn('perf', ['record', '-F', '2000', '-g', '-p', String(pid), '-o', perfOut], { stdio: 'ignore' }) : null;
    if (perf) await new Promise((r) => setTimeout(r, 500));
    const cpu0 = backendCpuMs(pid);
    const t1 = t();
    for (let b = 0; b < cpuBatches; b++) {
      await c.query(sqlText, args(false));
      for (let i = 0; i < n; i++) rev[i]++;
    }
    const cpuMs = backendCpuMs(pid) - cpu0;
    if (perf) {
      perf.kill('SIGINT');
      await new Promise((r) => perf.on('exit', r));
    }
    console.log(
      `server CPU ${((cpuMs * 1000) / (cpuBatches * n)).toFixed(1)} µs/append over ${cpuBatches} batches (with COMMIT; wall ${((t() - t1) / cpuBatches).toFixed(2)} ms/batch)`,
    );
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)].toFixed(2);
    console.log(`batch of ${n}: function ${med(fn)} ms, COMMIT ${med(commit)} ms; autocommit call ${med(auto)} ms (medians of ${batches})`);
    // Nested plans of one more batch.
    await c.query("LOAD 'auto_explain'");
    await c.query(
      "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = 'notice'; SET auto_explain.log_timing = on",
    );
    const notes: string[] = [];
    c.on('notice', (m) => notes.push(m.message ?? ''));
    await c.query(sqlText, args(false));
    const lines = notes.map((x) => x.split('\n').join(' | '));
    const byQuery = new Map<string, { count: number; ms: number }>();
    for (const m of notes) {
      const q = (/Query Text: ([^\n]*)/.exec(m)?.[1] ?? '?').slice(0, 90);
      const ms = Number(/duration: ([\d.]+) ms/.exec(m)?.[1] ?? '0');
      const e = byQuery.get(q) ?? { count: 0, ms: 0 };
      e.count++;
      e.ms += ms;
      byQuery.set(q, e);
    }
    for (const [q, e] of byQuery) console.log(`${e.count} x ${e.ms.toFixed(2)} ms total  ${q}`);
    if (process.argv.includes('--plans')) console.log(lines.join('\n'));
    await c.end();
  } finally {
    await db.drop();
  }
}
void main();
