import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';
import { until } from '../../support/wait';
import { freePort } from '../../support/free-port';

/**
 * `npm start` and `npx tollgate serve` are what a new user runs, and SIGTERM or SIGINT to the npm
 * process (a PID file, a process manager, Ctrl-C in another shell) must stop the service gracefully
 * and free its port. npm forwards those signals to the shell it runs the script in; Debian's sh
 * does not exec its last command, so the service was left running and listening. .npmrc makes
 * that shell bash (which does), the start script says `exec`, and bin/tollgate.js stops when its
 * parent goes under npm.
 */

const ROOT = join(__dirname, '..', '..', '..');

jest.setTimeout(180_000);

beforeAll(() => {
  // What `npm start` runs first; done here once so each case below only checks it (a hash of the sources).
  execFileSync(process.execPath, [join(ROOT, 'bin', 'build-if-stale.js')], { cwd: ROOT, stdio: 'inherit' });
}, 600_000);

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200;
  } catch {
    return false;
  }
}

const cases: Array<[string, NodeJS.Signals, string, string[]]> = [
  ['npm start', 'SIGTERM', 'npm', ['start']],
  ['npm start', 'SIGINT', 'npm', ['start']],
  ['npx tollgate serve', 'SIGTERM', 'npx', ['tollgate', 'serve']],
  ['npx tollgate serve', 'SIGINT', 'npx', ['tollgate', 'serve']],
];

test.each(cases)('%s: %s to the npm process stops the service gracefully and frees the port', async (_name, signal, cmd, args) => {
  const port = await freePort();
  const prefix = uniquePrefix('signals');
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-signals-'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(PORT|HOST|ROLE|EVENT_STORE|EVENTSTORE_|REDIS_|DATA_DIR|METRICS_PORT)/.test(k)) env[k] = v;
  const child: ChildProcess = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so the cleanup below can end whatever it started (and nothing else).
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await until(() => healthy(port), 120_000, `${cmd} ${args.join(' ')} answering /healthz on ${port}: ${out}`, 200);
    // On a built tree nothing is rebuilt (npm start rebuilt everything each time: 47-107 s to ready).
    expect(out).not.toMatch(/building dist/);
    child.kill(signal);
    await until(() => refuses(port), 30_000, `port ${port} released after ${signal}: ${out}`, 100);
    let done = false;
    void exited.then(() => (done = true));
    await until(() => done, 30_000, `${cmd} exiting after ${signal}: ${out}`, 100);
    // Graceful: the service's own shutdown ran (it logs the signal), not a kill.
    expect(out).toMatch(/"msg":"shutting down"/);
  } finally {
    // npm, its shell and the service, if any of them outlived the case (the bug this tests for).
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is gone: everything exited
    }
    await cleanupPrefix(TEST_REDIS_URL, prefix);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
