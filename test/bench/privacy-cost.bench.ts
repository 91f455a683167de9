/**
 * What sealing personal data costs a whole sign-up and a projection rebuild (docs/BENCHMARKS.md,
 * "Personal data sealed"), against the tollgate checked out in <dir> (the commit before encryption),
 * in one run with alternating rounds: each round starts each target in a child process of its own,
 * on a fresh SQLite file and Redis prefix, and
 *   - signs up N users through HTTP (POST /v1/signup, scrypt included, then a login), one at a time;
 *   - appends U more users' sign-up events through the service's store (the e-mail claim, UserRegistered,
 *     the personal workspace and its membership: sealed after, plain before), so a rebuild has
 *     personal data to open;
 *   - once the projections caught up, rebuilds every projection from position 0 (rebuildProjection).
 * Reports wall time and the process's CPU time (user + system, all threads) per sign-up and per
 * rebuild; CPU is what other load on the machine disturbs least.
 *   npx tsx test/bench/privacy-cost.bench.ts --baseline <dir> [--rounds 3] [--signups 20] [--users 500]
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const arg = (name: string, def?: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Figures {
  signupWallMs: number;
  signupCpuMs: number;
  rebuildWallMs: number;
  rebuildCpuMs: number;
  events: number;
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** One target, in this process: start it, sign up, rebuild, print the figures as one JSON line. */
async function child(root: string, signups: number, users: number): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports -- the target's own sources, by path */
  const { loadConfig } = require(join(root, 'src/platform/config'));
  const { start, projectionsOf } = require(join(root, 'src/main'));
  const { rebuildProjection } = require(join(root, 'src/platform/projections/rebuild'));
  const { usagePolicyOf } = require(join(root, 'src/accounts/policy/policy-document'));
  const { cleanupPrefix } = require(join(root, 'test/support/redis'));
  /* eslint-enable @typescript-eslint/no-require-imports */
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-privacy-bench-'));
  const prefix = `bench:${randomBytes(4).toString('hex')}:`;
  const config = loadConfig(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      DATA_DIR: dir,
      REDIS_URL,
      REDIS_PREFIX: prefix,
      MASTER_KEY: randomBytes(32).toString('base64'),
      LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE: '1000000',
      PASSWORD_HASH_QUEUE: '10000',
    },
    {},
  );
  const running = await start(config);
  try {
    const url = `http://127.0.0.1:${running.port}`;
    const version = usagePolicyOf(config).version;
    const post = async (path: string, body: unknown, want: number) => {
      const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.status !== want) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    };
    let wall = performance.now();
    let cpu = cpuMs();
    for (let i = 0; i < signups; i++) {
      const email = `bench-${randomBytes(6).toString('hex')}@example.com`;
      await post('/v1/signup', { email, password: 'correct horse battery', name: 'Bench Person', acceptedPolicyVersion: version }, 201);
      await post('/v1/login', { email, password: 'correct horse battery' }, 200);
    }
    const signupWallMs = (performance.now() - wall) / signups;
    const signupCpuMs = (cpuMs() - cpu) / signups;
    const s = running.services;
    for (let i = 0; i < users; i++) {
      const userId = randomUUID();
      const workspaceId = randomUUID();
      const email = `bulk-${randomBytes(6).toString('hex')}@example.com`;
      const one = (type: string, data: unknown) => [{ id: randomUUID(), type, data }];
      const opts = { expectedRevision: 'no_stream' };
      await s.store.append(`email-${randomBytes(32).toString('hex')}`, one('EmailClaimed', { email, userId }), opts);
      await s.store.append(`user-${userId}`, one('UserRegistered', { userId, email, name: 'Bulk Person', passwordHash: 'scrypt$x' }), opts);
      await s.store.append(
        `workspace-${workspaceId}`,
        [
          ...one('WorkspaceCreated', { workspaceId, name: 'Personal', personal: true, createdBy: userId }),
          ...one('MemberJoined', { workspaceId, userId, role: 'admin' }),
        ],
        opts,
      );
    }
    const head = await s.store.headPosition();
    if (!(await s.progress.waitFor(head, 120_000))) throw new Error('the projections did not catch up');
    wall = performance.now();
    cpu = cpuMs();
    for (const projection of projectionsOf(s)) {
      await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection, partitions: config.PROJECTION_PARTITIONS });
    }
    const figures: Figures = {
      signupWallMs,
      signupCpuMs,
      rebuildWallMs: performance.now() - wall,
      rebuildCpuMs: cpuMs() - cpu,
      events: (await s.store.readAll()).length,
    };
    process.stdout.write(JSON.stringify(figures) + '\n');
  } finally {
    await running.close();
    await cleanupPrefix(REDIS_URL, prefix).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

function runChild(root: string, signups: number, users: number): Promise<Figures> {
  return new Promise((done, fail) => {
    const p = spawn(
      process.execPath,
      ['--import', 'tsx', __filename, '--child', root, '--signups', String(signups), '--users', String(users)],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.once('exit', (code) =>
      code === 0 ? done(JSON.parse(out.trim().split('\n').at(-1)!) as Figures) : fail(new Error(`child ${root}: ${code}`)),
    );
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const signups = Number(arg('--signups', '20'));
  const users = Number(arg('--users', '500'));
  if (process.argv.includes('--child')) return child(arg('--child')!, signups, users);
  const baseline = arg('--baseline');
  if (!baseline) throw new Error('--baseline <dir>: a checkout of the commit before encryption');
  const rounds = Number(arg('--rounds', '3'));
  const targets: [string, string][] = [
    ['before (baseline)', resolve(baseline)],
    ['after (this checkout)', resolve(__dirname, '../..')],
  ];
  const results = new Map<string, Figures[]>(targets.map(([n]) => [n, []]));
  const load0 = loadavg();
  const t0 = new Date().toISOString();
  for (let r = 0; r < rounds; r++) {
    for (const [name, root] of r % 2 === 0 ? targets : [...targets].reverse()) {
      process.stderr.write(`round ${r + 1}/${rounds}: ${name} …\n`);
      results.get(name)!.push(await runChild(root, signups, users));
    }
  }
  const load1 = loadavg();
  const f = (n: number) => n.toFixed(1);
  const med = (name: string, k: keyof Figures) => median(results.get(name)!.map((x) => x[k]));
  const [b, a] = targets.map(([n]) => n);
  process.stdout.write(
    `Measured ${t0}, ${rounds} alternating rounds, ${signups} sign-ups (+ a login) through HTTP and ${users} more users appended each; load average ${load0.map((x) => x.toFixed(2)).join(' / ')} at the start, ${load1.map((x) => x.toFixed(2)).join(' / ')} at the end.\n\n` +
      '| median of the rounds | before | after | after / before |\n|---|---|---|---|\n' +
      (
        [
          ['sign-up + login, wall ms each', 'signupWallMs'],
          ['sign-up + login, CPU ms each', 'signupCpuMs'],
          ['rebuild of every projection, wall ms', 'rebuildWallMs'],
          ['rebuild of every projection, CPU ms', 'rebuildCpuMs'],
          ['events in the store', 'events'],
        ] as [string, keyof Figures][]
      )
        .map(([label, k]) => `| ${label} | ${f(med(b, k))} | ${f(med(a, k))} | ${(med(a, k) / med(b, k)).toFixed(2)} |`)
        .join('\n') +
      '\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
