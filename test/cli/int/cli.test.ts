import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { appendFx, fxExpected, fxSnapshot } from '../../support/fixtures/projections';
import { bundleChild } from '../../support/child-process';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

/** The real CLI (src/cli/index.ts) with the fixture projection module registered. */
const CLI = resolve(__dirname, '../../support/fixtures/cli.ts');
/** The real CLI exactly as shipped (src/modules.ts), started as bin/tollgate.js starts it. */
const REAL_CLI = resolve(__dirname, '../../support/fixtures/shipped-cli.ts');

/**
 * Each case starts the CLI as a process of its own and waits for it to exit: that is the condition,
 * and the limits below only stop a hung child. They are wide because a start under load (25 on 2
 * cores) took 20-30 s under tsx, past the old 30 s limit; the CLI now runs as one esbuild bundle of
 * the same sources, built once per file (about a third of tsx's CPU per start).
 */
const CHILD_LIMIT_MS = 110_000;
jest.setTimeout(120_000);

/** `node <args>` runs the fixture CLI (and the shipped one): a bundle, or tsx when esbuild is missing (KILL_CHILD=tsx). */
let cliArgs: string[] = ['--import', 'tsx', CLI];
let realCliArgs: string[] = ['--import', 'tsx', REAL_CLI];
const bundles: { args: string[]; dispose(): void }[] = [];
const ROOT = resolve(__dirname, '../../..');

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
const prefix = uniquePrefix();
const ks = new Keyspace(prefix);
let store: SqliteEventStore;
let redis: Redis;

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function baseEnv(): Record<string, string> {
  // The child must not inherit settings the test does not choose.
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(PORT|ROLE|EVENT_STORE|EVENTSTORE_|REDIS_|DATA_DIR)/.test(k)) env[k] = v;
  // NODE_PATH: the bundle leaves native packages (better-sqlite3, pg …) in node_modules.
  return {
    ...env,
    NODE_PATH: join(ROOT, 'node_modules'),
    DATA_DIR: dir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: 'silent',
  };
}

function run(args: string[], env: Record<string, string> = {}, opts: { real?: boolean; timeoutMs?: number } = {}): Promise<Result> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...(opts.real ? realCliArgs : cliArgs), ...args], {
      env: { ...baseEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`tollgate ${args.join(' ')} did not finish: ${stderr}`));
    }, opts.timeoutMs ?? CHILD_LIMIT_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    });
  });
}

/** One clear line on stderr, nothing on stdout, no stack trace. */
function expectOneLineFailure(r: Result, mentions: RegExp) {
  expect(r.code).not.toBe(0);
  expect(r.code).not.toBeNull();
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(mentions);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stdout).toBe('');
}

beforeAll(async () => {
  bundles.push(bundleChild(CLI), bundleChild(REAL_CLI));
  [cliArgs, realCliArgs] = bundles.map((b) => b.args);
  store = new SqliteEventStore({ file: join(dir, 'events.sqlite') });
  redis = new Redis(TEST_REDIS_URL);
  await appendFx(store, 30, 10); // streams fx-0, fx-1 and fx-2, 10 events each
});

afterAll(async () => {
  await cleanupPrefix(TEST_REDIS_URL, prefix);
  redis.disconnect();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  for (const b of bundles) b.dispose();
});

describe('tollgate projections', () => {
  test('status shows name, checkpoint, head and lag', async () => {
    const r = await run(['projections', 'status']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [header, row, ...rest] = r.stdout.trim().split('\n');
    expect(header.split(/\s+/)).toEqual(['NAME', 'GEN', 'CHECKPOINT', 'HEAD', 'LAG']);
    expect(row.split(/\s+/)).toEqual(['fx-ledger', '0', '0', '30', '30']);
    expect(rest).toEqual([]);

    const json = await run(['projections', 'status', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([{ name: 'fx-ledger', gen: '0', checkpoint: '0', head: '30', lag: '30' }]);
  });

  test('rebuild <name> replays into a new generation with a progress bar, then status shows no lag', async () => {
    const r = await run(['projections', 'rebuild', 'fx-ledger', '--batch-size', '7']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^rebuilt fx-ledger: 30 events in \d+ ms \(\d+ events\/s\), now generation 1\n$/);
    expect(r.stderr).toMatch(/fx-ledger \[[=-]+\] 100% \| 30\/30 positions/);
    const { gen, ...model } = await fxSnapshot(redis, ks);
    expect(gen).toBe('1');
    expect(model).toEqual(fxExpected(await store.readAll()));

    const status = await run(['projections', 'status']);
    expect(status.stdout.trim().split('\n')[1].split(/\s+/)).toEqual(['fx-ledger', '1', '30', '30', '0']);
  });

  test('rebuild of an unknown projection fails with one line', async () => {
    const r = await run(['projections', 'rebuild', 'nope']);
    expectOneLineFailure(r, /^tollgate: unknown projection "nope"; known: fx-ledger$/);
  });

  test('status with the shipped module list prints a header or a clear line', async () => {
    const r = await run(['projections', 'status'], {}, { real: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^(NAME\s+GEN\s+CHECKPOINT\s+HEAD\s+LAG\n|no projections registered \(event store head 30\)\n)/);
  });

  test('status against an unreachable Redis: one line naming REDIS_URL', async () => {
    const r = await run(['projections', 'status'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expectOneLineFailure(r, /REDIS_URL=redis:\/\/127\.0\.0\.1:1.*ECONNREFUSED/);
  });
});

describe('tollgate events', () => {
  test('read <stream> prints one JSON object per line, oldest first', async () => {
    const r = await run(['events', 'read', 'fx-0']);
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const expected = await store.readStream('fx-0');
    expect(lines).toHaveLength(10);
    expect(lines).toEqual(
      expected.map((e) => ({
        position: e.position.toString(),
        stream: 'fx-0',
        revision: e.revision.toString(),
        type: e.type,
        created: e.created,
        id: e.id,
        data: e.data,
        metadata: e.metadata,
      })),
    );
  });

  test('read of a missing stream prints nothing and says so on stderr', async () => {
    const r = await run(['events', 'read', 'no-such-stream']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no-such-stream is empty or does not exist/);
  });

  test('read works without Redis (only the store is needed)', async () => {
    const r = await run(['events', 'read', 'fx-1'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(10);
  });

  test('tail follows new events until interrupted', async () => {
    const child = spawn(process.execPath, [...cliArgs, 'events', 'tail', '--from', '28'], {
      env: baseEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const lines = () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { position: string });
    const deadline = Date.now() + CHILD_LIMIT_MS;
    try {
      while (lines().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(lines().map((l) => l.position)).toEqual(['29', '30']);
      await appendFx(store, 3, 3);
      while (lines().length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(lines().map((l) => l.position)).toEqual(['29', '30', '31', '32', '33']);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(err).toBe('');
    } finally {
      // A failed expectation must not leave the follower running: it kept jest from exiting.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  test('tail --from with a bad position fails with one line', async () => {
    const r = await run(['events', 'tail', '--from', 'yesterday']);
    expectOneLineFailure(r, /--from must be a position/);
  });
});

describe('tollgate keys and sealed fields', () => {
  test('events read shows an erased user as erased; rotate-master re-wraps the live keys with a new key file, and secrets still open', async () => {
    const { openProtectedStore } = await import('../../../src/init');
    const { store: sealed } = openProtectedStore({ EVENT_STORE: 'sqlite', DATA_DIR: dir }, () => undefined);
    const userId = randomUUID();
    const ws = randomUUID();
    const email = `cli-${userId}@example.com`;
    await sealed.append(
      `user-${userId}`,
      [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email, name: 'Cli Person', passwordHash: 'scrypt$x' } }],
      {
        expectedRevision: 'no_stream',
      },
    );
    await sealed.append(
      `webhooks-${ws}`,
      [
        {
          id: randomUUID(),
          type: 'WebhookEndpointRegistered',
          data: { workspaceId: ws, endpointId: 'whe_1', url: 'https://example.com/h', eventTypes: [], secret: 'whsec_clitest', by: userId },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    await sealed.keys.destroy(`user:${userId}`);
    await sealed.close();

    const read = await run(['events', 'read', `user-${userId}`]);
    expect(read.code).toBe(0);
    expect(JSON.parse(read.stdout.trim()).data).toEqual({ userId, email: '[erased]', name: '[erased]', passwordHash: '[erased]' });

    const before = readFileSync(join(dir, 'master.key'), 'utf8');
    const rotated = await run(['keys', 'rotate-master']);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(
      /^re-wrapped [1-9]\d* data keys with master key [0-9a-f]{16} \(new key in .*master\.key: restart the service\)\n$/,
    );
    expect(readFileSync(join(dir, 'master.key'), 'utf8')).not.toBe(before);
    const secret = await run(['events', 'read', `webhooks-${ws}`]);
    expect(JSON.parse(secret.stdout.trim()).data.secret).toBe('whsec_clitest');
  });

  test('serve with another master key than the store was written with stops at start: one line naming MASTER_KEY, non-zero (also the generated key file)', async () => {
    const own = mkdtempSync(join(tmpdir(), 'tollgate-cli-wrong-key-'));
    try {
      const { openProtectedStore } = await import('../../../src/init');
      const right = randomBytes(32).toString('base64');
      const { store: sealed } = openProtectedStore({ EVENT_STORE: 'sqlite', DATA_DIR: own, MASTER_KEY: right }, () => undefined);
      const userId = randomUUID();
      await sealed.append(
        `user-${userId}`,
        [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email: `k-${userId}@example.com`, name: 'K', passwordHash: 'x' } }],
        { expectedRevision: 'no_stream' },
      );
      await sealed.close();
      const wrong = randomBytes(32).toString('base64');
      for (const env of [{ MASTER_KEY: wrong }, {}] as Record<string, string>[]) {
        // {}: no MASTER_KEY, so the key file generated under DATA_DIR, which is not the store's key either.
        const r = await run(['serve'], { DATA_DIR: own, PORT: '0', ...env }, { real: true });
        expectOneLineFailure(r, /^tollgate: invalid setting MASTER_KEY: .*not the master key of this store's data keys/);
        expect(r.stderr).not.toContain(wrong);
      }
      // While rotating, the store's key as MASTER_KEY_PREVIOUS opens it: events read works.
      const rotating = await run(['events', 'read', `user-${userId}`], { DATA_DIR: own, MASTER_KEY: wrong, MASTER_KEY_PREVIOUS: right });
      expect(rotating.code).toBe(0);
      expect(JSON.parse(rotating.stdout.trim()).data.name).toBe('K');
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  test('a MASTER_KEY that is not 32 bytes of base64: one line naming the setting, non-zero', async () => {
    const r = await run(['events', 'read', 'fx-0'], { MASTER_KEY: 'not-a-key' });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/MASTER_KEY: must be 32 bytes in base64/);
    expect(r.stderr).not.toContain('not-a-key');
  });
});

describe('tollgate: a reader that stops early', () => {
  test('events read | head -1 prints the first line and exits 0 quietly (EPIPE)', async () => {
    // 4,000 events (~1 MB of lines): far more than a pipe buffers, so writes go on after head has gone.
    const bigDir = mkdtempSync(join(tmpdir(), 'tollgate-cli-pipe-'));
    const big = new SqliteEventStore({ file: join(bigDir, 'events.sqlite') });
    try {
      await appendFx(big, 4000, 4000);
      await big.close();
      const r = await new Promise<Result & { first: string }>((done) => {
        const child = spawn(
          'bash',
          ['-o', 'pipefail', '-c', `"${process.execPath}" ${cliArgs.map((a) => `"${a}"`).join(' ')} events read fx-0 | head -1`],
          {
            // A master key of its own, so the first start's "generated a master key" line is not on stderr.
            env: { ...baseEnv(), DATA_DIR: bigDir, MASTER_KEY: randomBytes(32).toString('base64') },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.once('exit', (code, signal) => done({ code, signal, stdout, stderr, first: stdout.split('\n')[0] }));
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.first)).toMatchObject({ stream: 'fx-0', revision: '0' });
      expect(r.stdout.trim().split('\n')).toHaveLength(1);
    } finally {
      rmSync(bigDir, { recursive: true, force: true });
    }
  });
});

describe('tollgate serve: bad input', () => {
  test('several bad settings: one line each, every line starting with tollgate:', async () => {
    const r = await run(['serve'], { PORT: 'abc', ROLE: 'boss' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(/^tollgate: invalid setting (PORT|ROLE): /);
  });

  test('an unknown role: one line naming the role, non-zero', async () => {
    const r = await run(['serve', '--role', 'bogus']);
    expectOneLineFailure(r, /unknown role "bogus".*all, api, projector, worker/);
  });

  test('an unknown ROLE in the environment: one line naming ROLE', async () => {
    const r = await run(['serve'], { ROLE: 'boss' });
    expectOneLineFailure(r, /^tollgate: invalid setting ROLE: .*\(got "boss"\)$/);
  });

  test('PORT=abc: one line naming PORT', async () => {
    const r = await run(['serve'], { PORT: 'abc' });
    expectOneLineFailure(r, /^tollgate: invalid setting PORT: .*\(got "abc"\)$/);
  });

  test('a malformed EventStoreDB connection string: one line naming it', async () => {
    const r = await run(['serve'], { EVENT_STORE: 'esdb', EVENTSTORE_CONNECTION_STRING: 'nonsense' });
    expectOneLineFailure(r, /^tollgate: invalid setting EVENTSTORE_CONNECTION_STRING: .*\(got "nonsense"\)$/);
  });

  test('a malformed REDIS_URL: one line naming it', async () => {
    const r = await run(['serve', '--role', 'api'], { REDIS_URL: 'localhost:6379' });
    expectOneLineFailure(r, /^tollgate: invalid setting REDIS_URL: /);
  });

  test('an unreachable Redis: one line naming REDIS_URL', async () => {
    const r = await run(['serve'], { REDIS_URL: 'redis://127.0.0.1:1', PORT: '0' });
    expectOneLineFailure(r, /^tollgate: .*cannot reach Redis at REDIS_URL=redis:\/\/127\.0\.0\.1:1: connect ECONNREFUSED/);
  });

  test('an event store that cannot be opened: one line naming DATA_DIR', async () => {
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const r = await run(['serve'], { DATA_DIR: join(file, 'sub'), PORT: '0' });
    expectOneLineFailure(r, /^tollgate: event store unavailable \(EVENT_STORE=sqlite, DATA_DIR=.*not-a-dir\/sub\)/);
  });

  test('an unreachable EventStoreDB: one line naming the connection string', async () => {
    const r = await run(['serve'], { EVENT_STORE: 'esdb', EVENTSTORE_CONNECTION_STRING: 'esdb://127.0.0.1:1?tls=false', PORT: '0' });
    expectOneLineFailure(
      r,
      /^tollgate: event store unavailable \(EVENT_STORE=esdb, EVENTSTORE_CONNECTION_STRING=esdb:\/\/127\.0\.0\.1:1\?tls=false\)/,
    );
  });

  test('an unreachable PostgreSQL: one line naming DATABASE_URL, password hidden', async () => {
    const r = await run(['serve'], { EVENT_STORE: 'postgres', DATABASE_URL: 'postgres://tg:hunter2@127.0.0.1:1/tollgate', PORT: '0' });
    expectOneLineFailure(
      r,
      /^tollgate: event store unavailable \(EVENT_STORE=postgres, DATABASE_URL=postgres:\/\/\*\*\*@127\.0\.0\.1:1\/tollgate\): .*ECONNREFUSED/,
    );
    expect(r.stderr).not.toContain('hunter2');
  });

  test('an unknown command: non-zero', async () => {
    const r = await run(['frobnicate']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/unknown command 'frobnicate'/);
  });
});

describe('tollgate serve', () => {
  test('--role api starts, answers /healthz and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [...cliArgs, 'serve', '--role', 'api'], {
      env: { ...baseEnv(), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const deadline = Date.now() + CHILD_LIMIT_MS;
    let port: number | undefined;
    while (!port && Date.now() < deadline) {
      const m = /"port":(\d+)/.exec(out);
      if (m) port = Number(m[1]);
      else await new Promise((r) => setTimeout(r, 50));
    }
    expect(port).toBeDefined();
    expect(out).toMatch(/"role":"api"/);
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(res.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
