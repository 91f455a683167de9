/**
 * Faults seen from outside the process, as an operator meets them: a second instance started on a
 * busy port, and a Redis that goes away under a running service.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cleanupPrefix, TEST_REDIS_URL, testRedisAddress, testRedisUrlVia, uniquePrefix } from '../../support/redis';
import { until } from '../../support/wait';

// A child that compiles src/main.ts with tsx takes seconds when quiet, and has taken over 40 s to
// listen under a load of 30: the bounds below are for that, not for what the tests check.
jest.setTimeout(240_000);

const MAIN = resolve(__dirname, '../../../src/main.ts');
const dirs: string[] = [];
const prefixes: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const p of prefixes) await cleanupPrefix(TEST_REDIS_URL, p);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function service(env: Record<string, string>): { child: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-proc-'));
  dirs.push(dir);
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...process.env, HOST: '127.0.0.1', DATA_DIR: dir, REDIS_PREFIX: prefix, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out: () => out, exited };
}

function listen(server: Server): Promise<number> {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
}

test('a second instance on a busy port exits at once with one line naming PORT', async () => {
  const busy = createServer();
  const port = await listen(busy);
  try {
    const second = service({ PORT: String(port) });
    const code = await Promise.race([second.exited, new Promise<string>((r) => setTimeout(() => r('still running'), 90_000).unref())]);
    expect(code).toBe(1);
    const lines = second.out().trim().split('\n');
    const last = lines[lines.length - 1];
    expect(last).toBe(`tollgate: cannot listen on PORT=${port} (HOST=127.0.0.1): the port is already in use`);
    // nothing else on stderr but JSON log lines
    expect(lines.slice(0, -1).filter((l) => !l.startsWith('{'))).toEqual([]);
  } finally {
    busy.close();
  }
});

test('a Redis that goes away puts only JSON log lines on stdout and stderr, never a stack trace', async () => {
  // A TCP proxy in front of the real Redis, which the test can take away.
  const target = testRedisAddress();
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(target.port, target.host);
    client.pipe(upstream).pipe(client);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const proxyPort = await listen(proxy);
  // Through the proxy to REDIS_URL's own db: the keys it writes are the ones afterAll removes.
  const svc = service({ PORT: '0', REDIS_URL: testRedisUrlVia('127.0.0.1', proxyPort), SWEEPER_INTERVAL_MS: '500' });
  await until(() => /tollgate listening/.test(svc.out()), 90_000, 'the service to listen');
  // Redis goes away: every connection drops and new ones are refused
  proxy.close();
  for (const s of sockets) s.destroy();
  // At least 6 s of outage, and long enough that the parts that meet Redis have logged it several
  // times (about 50 lines in 6 s when quiet): a loaded machine may have logged nothing in 6 s.
  const outageAt = svc.out().length;
  const outageStarted = Date.now();
  await until(
    () => {
      const since = svc.out().slice(outageAt);
      return (
        Date.now() - outageStarted >= 6000 &&
        since.includes('sweeper worker error') &&
        since.includes('auto-reload worker error') &&
        since.split('\n').length > 30
      );
    },
    90_000,
    'the outage to be met and logged',
  );
  svc.child.kill('SIGTERM');
  await Promise.race([svc.exited, new Promise((r) => setTimeout(r, 15_000).unref())]);
  const lines = svc
    .out()
    .split('\n')
    .filter((l) => l.trim() !== '');
  const notJson = lines.filter((l) => {
    try {
      JSON.parse(l);
      return false;
    } catch {
      return true;
    }
  });
  expect(notJson).toEqual([]);
  expect(lines.length).toBeGreaterThan(1);
});
