import { createServer, connect, type Server, type Socket } from 'node:net';
import { loadConfig } from '../../../src/platform/config';
import { connectRedis, RedisUnavailable } from '../../../src/platform/redis';
import { TEST_REDIS_URL } from '../../support/redis';

/**
 * A busy host answers Redis late, not never: the start-up connect waits REDIS_CONNECT_TIMEOUT_MS
 * (it used to give up after a fixed 3 s, and processes of a loaded cluster failed to start).
 */
const target = new URL(TEST_REDIS_URL);
const sockets = new Set<Socket>();

/** A TCP relay to the test Redis that holds every byte from the client for `delayMs` (or forever). */
function relay(delayMs: number | 'never'): Promise<{ server: Server; url: string }> {
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(Number(target.port || 6379), target.hostname);
    sockets.add(upstream);
    client.on('data', (chunk) => {
      if (delayMs !== 'never') setTimeout(() => upstream.destroyed || upstream.write(chunk), delayMs).unref();
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => (client.destroy(), upstream.destroy());
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ server, url: `redis://127.0.0.1:${port}` });
    }),
  );
}

const servers: Server[] = [];
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

it('waits past 3 s for a Redis that answers late', async () => {
  const { server, url } = await relay(3500);
  servers.push(server);
  const redis = await connectRedis(url, 'slow', {}, 10_000);
  try {
    expect(await redis.ping()).toBe('PONG');
  } finally {
    redis.disconnect();
  }
}, 60_000);

it('gives up after the timeout it is given, naming the setting', async () => {
  const { server, url } = await relay('never');
  servers.push(server);
  const started = Date.now();
  const err = await connectRedis(url, 'silent', {}, 300).catch((e: Error) => e);
  expect(err).toBeInstanceOf(RedisUnavailable);
  expect((err as Error).message).toMatch(
    /^cannot reach Redis at REDIS_URL=redis:\/\/127\.0\.0\.1:\d+: no answer within 300 ms \(REDIS_CONNECT_TIMEOUT_MS\)$/,
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(300);
});

it('REDIS_CONNECT_TIMEOUT_MS defaults to 10 s and rejects nonsense with one line', () => {
  expect(loadConfig({}, {}).REDIS_CONNECT_TIMEOUT_MS).toBe(10_000);
  expect(loadConfig({ REDIS_CONNECT_TIMEOUT_MS: '2500' }, {}).REDIS_CONNECT_TIMEOUT_MS).toBe(2500);
  expect(() => loadConfig({ REDIS_CONNECT_TIMEOUT_MS: 'soon' }, {})).toThrow(/REDIS_CONNECT_TIMEOUT_MS/);
});
