/**
 * bench:redis — how much work one request costs the Redis server: its CPU and the commands it runs
 * (scripts' commands included), with all roles in one process, as `npm start` runs them.
 *
 *   npm run bench:redis                        # SQLite; prints tables
 *   npm run bench:redis -- --store postgres    # PostgreSQL (a database of its own, dropped after)
 *   options: --requests <n> (400, half streamed) --rate <req/s> (30) --workspaces <n> (8) --json
 *
 * The service (every module, the demo model with no delay between tokens) runs in this process
 * against a private redis-server on a free port (a temp dir, no persistence): its CPU is the
 * server's own (INFO cpu: getrusage of the redis-server process) and its counters are exact. Keys
 * (one funded key per workspace) are taken in turn; requests go at a fixed rate, alternating the
 * non-streaming and the streaming native route. Phases, each after CONFIG RESETSTAT:
 *   idle      the service doing nothing for as long as one request phase lasts (lease, readiness and
 *             BullMQ polls): what every other phase includes as background
 *   live      the requests, then until the projector (and every reactor) applied their events
 *   profiled  the same again with SLOWLOG logging every command: where the commands and the
 *             execution time go, by connection (request path, projector, reactors …) and by script
 *   api only  the projector stopped: a request's own admission, pending step and completion
 *   catch-up  a projector started over what the api-only phase appended: batches and reactors
 *             (profiled, so its CPU is overstated by the profiling's cost, given by live/profiled)
 * Then each script's CPU (./redis-replay.ts): live samples replayed against the same server, CPU
 * read around each run, so not inflated by preemption as SLOWLOG's wall-time µs are.
 */
import { spawn, ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/platform/config';
import { start, Running } from '../../src/main';
import { seedFundedKey } from '../inference/int/support/seed';
import { createTestDatabase, TestDatabase } from '../support/postgres';
import { sleep, until } from '../support/wait';
import { numberArg } from './bench-http';
import {
  catalogueSourceScripts,
  Counters,
  installEvalTags,
  nameOfSha,
  nameOfText,
  readCounters,
  readProfile,
  recordDefinedScripts,
  resetStats,
  tagEvals,
  totalCalls,
  Profile,
} from './redis-profile';
import { captureScripts, installCapture, replayCosts, ScriptCpu } from './redis-replay';
import { freePort } from '../support/free-port';

const stringArg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const STORE = stringArg('store', 'sqlite') as 'sqlite' | 'postgres';
const REQUESTS = numberArg('requests', 400);
const RATE = numberArg('rate', 30);
const WORKSPACES = numberArg('workspaces', 8);
const JSON_OUT = process.argv.includes('--json');
const ADMIN_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

const BODY = (i: number) =>
  JSON.stringify({
    context: [
      { type: 'Instruction', text: 'Answer in one sentence.' },
      { type: 'Human', text: `Hi! What is the weather usually like in spring? (request ${i})` },
    ],
    config: i % 4 < 2 ? 'service_3_pi' : 'service_3_productivity',
    max_tokens: 32,
    web_search: false,
  });

async function privateRedis(dir: string): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const url = `redis://127.0.0.1:${port}`;
  await until(
    async () => {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        if (proc.exitCode !== null) throw new Error('redis-server exited at start');
        return false;
      } finally {
        probe.disconnect();
      }
    },
    30_000,
    'redis-server to answer',
  );
  return { url, proc };
}

// ---------------------------------------------------------------- load

interface Load {
  ok: number;
  failed: Map<string, number>;
  ms: number;
}

/** `n` requests at `rate` per second (open loop), alternating non-streamed and streamed, keys in turn. */
async function drive(base: string, secrets: string[], n: number, rate: number, offset: number): Promise<Load> {
  const failed = new Map<string, number>();
  let ok = 0;
  const t0 = performance.now();
  const one = async (i: number) => {
    const streamed = i % 2 === 1;
    try {
      const res = await fetch(`${base}/external/api/inference${streamed ? '/streaming' : ''}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secrets[i % secrets.length]}`, 'content-type': 'application/json' },
        body: BODY(offset + i),
      });
      const text = await res.text();
      if (res.status === 200 && (!streamed || !text.includes('event: error'))) ok++;
      else {
        const why = `HTTP ${res.status} ${text.slice(0, 80)}`;
        failed.set(why, (failed.get(why) ?? 0) + 1);
      }
    } catch (err) {
      failed.set((err as Error).message, (failed.get((err as Error).message) ?? 0) + 1);
    }
  };
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    inflight.push(one(i));
  }
  await Promise.all(inflight);
  return { ok, failed, ms: performance.now() - t0 };
}

// ---------------------------------------------------------------- phases

interface Phase {
  name: string;
  requests: number;
  ms: number;
  cpuUs: number;
  calls: number;
  counters: Counters;
  profile?: Profile;
}

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

async function main(): Promise<void> {
  recordDefinedScripts();
  installEvalTags();
  installCapture(nameOfText, new Set(['tollgateReadInGeneration', 'tollgateAdmit', 'tollgatePending']), nameOfSha);
  catalogueSourceScripts();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-redis-'));
  const redis = await privateRedis(dir);
  const admin = new Redis(redis.url);
  let db: TestDatabase | null = null;
  const running: Running[] = [];
  const loadAt = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  try {
    if (STORE === 'postgres') db = await createTestDatabase('bench_redis', { adminUrl: ADMIN_URL });
    const env = {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      NODE_ENV: 'production',
      DATA_DIR: dir,
      REDIS_URL: redis.url,
      REDIS_PREFIX: 'bench:',
      DEMO_TOKEN_DELAY_MS: '0',
      RATE_LIMIT_PER_MINUTE: '1000000',
      ...(db ? { EVENT_STORE: 'postgres', DATABASE_URL: db.url } : {}),
    };
    const all = await start(loadConfig({ ...env, ROLE: 'all' }));
    running.push(all);
    const s = all.services;
    const keys = [];
    for (let w = 0; w < WORKSPACES; w++) keys.push(await seedFundedKey(s, { usd: '1000000', rateLimit: 1_000_000 }));
    const secrets = keys.map((k) => k.secret);
    const base = `http://127.0.0.1:${all.port}`;
    // Warm-up: first-request costs (script loads, tokenizer, JIT) are not the steady state measured.
    await drive(base, secrets, 40, RATE, 1_000_000);
    const caughtUp = async (progress: { waitFor(p: bigint, ms: number): Promise<boolean> }) => {
      const head = await s.store.headPosition();
      if (!(await progress.waitFor(head, 300_000))) throw new Error('the projector did not catch up within 300 s');
      // Reactors record their checkpoints after the batch's projections committed.
      const reactorKeys = await admin.keys('bench:*reactor*');
      await until(
        async () => {
          const values = reactorKeys.length ? await admin.mget(...reactorKeys) : [];
          return values.every((v) => v === null || !/^\d+$/.test(v) || BigInt(v) >= head);
        },
        120_000,
        'the reactors to catch up',
        50,
      );
    };
    await caughtUp(all.runner!);

    const phases: Phase[] = [];
    const measure = async (name: string, requests: number, profile: boolean, body: () => Promise<void>) => {
      await resetStats(admin, profile);
      tagEvals(profile);
      const before = await readCounters(admin);
      const t0 = performance.now();
      await body();
      const ms = performance.now() - t0;
      const after = await readCounters(admin);
      const phase: Phase = { name, requests, ms, cpuUs: after.cpuUs - before.cpuUs, calls: totalCalls(after), counters: after };
      if (profile) phase.profile = await readProfile(admin);
      phases.push(phase);
      process.stderr.write(
        `${name}: ${fmt(ms / 1000, 1)} s, ${fmt(phase.cpuUs / 1000, 1)} ms of redis-server CPU, ${fmt(phase.calls)} commands\n`,
      );
      return phase;
    };
    const loadOf = async (offset: number) => {
      const l = await drive(base, secrets, REQUESTS, RATE, offset);
      if (l.failed.size) process.stderr.write(`  failures: ${JSON.stringify([...l.failed])}\n`);
      return l;
    };

    const idleMs = (REQUESTS / RATE) * 1000;
    await measure('idle', 0, false, () => sleep(idleMs));
    await measure('live', REQUESTS, false, async () => {
      // One sample of each script (the first live batch's EVALs), replayed for its CPU at the end.
      captureScripts(true);
      await loadOf(0);
      captureScripts(false);
      await caughtUp(all.runner!);
    });
    await measure('profiled', REQUESTS, true, async () => {
      await loadOf(REQUESTS);
      await caughtUp(all.runner!);
    });
    await all.runner!.stop();
    await measure('api only', REQUESTS, false, async () => {
      await loadOf(2 * REQUESTS);
    });
    await measure('catch-up', REQUESTS, true, async () => {
      const projector = await start(loadConfig({ ...env, ROLE: 'projector' }));
      running.push(projector);
      await caughtUp(projector.runner!);
    });
    const costs = await replayCosts(admin);
    report(phases, loadAt, costs);
  } finally {
    for (const r of running.reverse()) await r.close().catch(() => undefined);
    admin.disconnect();
    await db?.drop().catch(() => undefined);
    redis.proc.kill('SIGTERM');
    await new Promise((r) => redis.proc.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- report

function report(phases: Phase[], loadAt: string, costs: Map<string, ScriptCpu>): void {
  const idle = phases.find((p) => p.name === 'idle')!;
  const idleRate = { cpu: idle.cpuUs / idle.ms, calls: idle.calls / idle.ms };
  if (JSON_OUT) {
    const plain = phases.map(({ counters, profile, ...p }) => ({
      ...p,
      commands: Object.fromEntries(counters.commands),
      profile: profile && {
        byConnection: Object.fromEntries(profile.byConnection),
        byScript: Object.fromEntries([...profile.byScript].map(([k, v]) => [k, { ...v, connections: [...v.connections] }])),
      },
    }));
    process.stdout.write(
      `${JSON.stringify({ store: STORE, requests: REQUESTS, rate: RATE, load: loadAt, phases: plain, scriptCpu: Object.fromEntries(costs) }, null, 2)}\n`,
    );
    return;
  }
  const out: string[] = [];
  out.push(`bench:redis, ${STORE}, ${REQUESTS} requests per phase at ${RATE}/s (half streamed), ${WORKSPACES} workspaces`);
  out.push(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load at start ${loadAt}, at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  out.push('');
  out.push('| phase | wall s | redis CPU µs/req | commands/req | idle share of CPU | CPU µs/req less idle | commands/req less idle |');
  out.push('|---|---|---|---|---|---|---|');
  for (const p of phases) {
    if (p.name === 'idle') {
      out.push(
        `| idle (per second) | ${fmt(p.ms / 1000, 1)} | ${fmt(p.cpuUs / (p.ms / 1000))} µs/s | ${fmt(p.calls / (p.ms / 1000), 1)} /s | | | |`,
      );
      continue;
    }
    const idleCpu = idleRate.cpu * p.ms;
    const idleCalls = idleRate.calls * p.ms;
    out.push(
      `| ${p.name} | ${fmt(p.ms / 1000, 1)} | ${fmt(p.cpuUs / p.requests)} | ${fmt(p.calls / p.requests, 1)} | ${fmt((100 * idleCpu) / p.cpuUs)}% | ${fmt((p.cpuUs - idleCpu) / p.requests)} | ${fmt((p.calls - idleCalls) / p.requests, 1)} |`,
    );
  }
  for (const p of phases.filter((x) => x.requests > 0 && !x.profile)) {
    out.push('');
    out.push(`${p.name}: commands per request (INFO commandstats; a script's µs include its commands'; µs are wall time inside Redis):`);
    out.push('');
    out.push('| command | calls/req | µs/req | µs/call |');
    out.push('|---|---|---|---|');
    for (const [name, v] of [...p.counters.commands].sort((a, b) => b[1].calls - a[1].calls)) {
      if (/^(info|config|slowlog)/.test(name) || v.calls / p.requests < 0.05) continue;
      out.push(`| ${name} | ${fmt(v.calls / p.requests, 2)} | ${fmt(v.usec / p.requests, 1)} | ${fmt(v.usec / v.calls, 1)} |`);
    }
  }
  out.push('');
  out.push(
    'CPU per script, replayed: the live phase\'s smallest and largest sample of each, 100 runs × 3 rounds, median; getrusage of redis-server, not inflated by preemption. For a batch script, "calls" are the debits (or keys) packed into one EVAL; fixed and per call are fitted from the two samples:',
  );
  out.push('');
  out.push('| script | calls, small sample | µs | calls, large sample | µs | µs fixed per EVAL | µs per call |');
  out.push('|---|---|---|---|---|---|---|');
  for (const [name, c] of [...costs].sort((a, b) => b[1].most.us - a[1].most.us)) {
    const fit = (n: number | null) => (n === null ? '' : fmt(n, 1));
    out.push(
      `| ${name} | ${c.few.calls} | ${fmt(c.few.us, 1)} | ${c.most.calls} | ${fmt(c.most.us, 1)} | ${fit(c.fixed)} | ${fit(c.perCall)} |`,
    );
  }
  for (const p of phases.filter((x) => x.profile)) {
    const prof = p.profile!;
    out.push('');
    out.push(`${p.name}: by connection, per request (SLOWLOG at 0: ${fmt(prof.entries)} entries; execution µs only, no parsing or I/O):`);
    out.push('');
    out.push('| connection | commands sent/req | run inside scripts/req | exec µs/req |');
    out.push('|---|---|---|---|');
    for (const [name, t] of [...prof.byConnection].sort((a, b) => b[1].usec - a[1].usec)) {
      out.push(`| ${name} | ${fmt(t.calls / p.requests, 2)} | ${fmt(t.inner / p.requests, 2)} | ${fmt(t.usec / p.requests, 1)} |`);
    }
    out.push('');
    out.push(`${p.name}: by script, per request:`);
    out.push('');
    out.push('| script | run by | calls/req | commands inside/call | exec µs/req | µs/call |');
    out.push('|---|---|---|---|---|---|');
    for (const [name, t] of [...prof.byScript].sort((a, b) => b[1].usec - a[1].usec)) {
      out.push(
        `| ${name} | ${[...t.connections].join(', ')} | ${fmt(t.calls / p.requests, 2)} | ${fmt(t.inner / t.calls, 1)} | ${fmt(t.usec / p.requests, 1)} | ${fmt(t.usec / t.calls, 1)} |`,
      );
    }
    out.push('');
    out.push(`${p.name}: other commands sent, per request (top 15 by calls):`);
    out.push('');
    out.push('| connection and command | calls/req | exec µs/req |');
    out.push('|---|---|---|');
    for (const [name, t] of [...prof.plain].sort((a, b) => b[1].calls - a[1].calls).slice(0, 15)) {
      out.push(`| ${name} | ${fmt(t.calls / p.requests, 2)} | ${fmt(t.usec / p.requests, 1)} |`);
    }
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:redis failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
