/**
 * A closed Redis connection leaves nothing that holds the process open. ioredis's disconnect() on a
 * socket that has already closed arms a 2 s timer that nothing clears: a failed start-up connect
 * kept jest's process alive ("Jest did not exit one second after the test run has completed") and
 * its workers ("a worker process has failed to exit gracefully"). Each case records the timers and
 * sockets created while it runs and fails on any still referenced once it is over.
 */
import { createHook } from 'node:async_hooks';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { connectRedis, disconnectRedis, RedisUnavailable } from '../../../src/platform/redis';
import { TEST_REDIS_URL } from '../../support/redis';
import { eventually, until } from '../../support/wait';

type Resource = { hasRef?: () => boolean; _destroyed?: boolean };
const live = new Map<number, { type: string; resource: Resource }>();
let recording = false;
const hook = createHook({
  init(id, type, _trigger, resource) {
    if (recording && (type === 'Timeout' || type === 'TCPWRAP')) live.set(id, { type, resource: resource as Resource });
  },
  destroy(id) {
    live.delete(id);
  },
});
beforeAll(() => hook.enable());
afterAll(() => hook.disable());

/** Runs `fn` and returns the types of the referenced timers and sockets it created that are still open once closes have had their turn. */
async function leftOpen(fn: () => Promise<unknown>): Promise<string[]> {
  live.clear();
  recording = true;
  try {
    await fn();
  } finally {
    recording = false;
  }
  // A socket's 'close' comes a few turns later, not at once, and clears the timer ioredis set for it
  // in the same turn. Only the sockets are waited for: the timer left behind fires by itself after
  // 2 s, and waiting that long would hide it.
  // A cleared timer's destroy hook runs a little later; `_destroyed` says so at once (a closed socket's hasRef() is false).
  const open = () => [...live.values()].filter(({ resource: r }) => !r._destroyed && (r.hasRef?.() ?? true)).map((r) => r.type);
  await eventually(
    async () => open(),
    (o) => !o.includes('TCPWRAP'),
  );
  return open();
}

async function refusedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

test('a start-up connect to a Redis that refuses fails and leaves no timer or socket open', async () => {
  const port = await refusedPort();
  const open = await leftOpen(async () => {
    const err = await connectRedis(`redis://127.0.0.1:${port}`, 'refused', {}, 2000).catch((e: Error) => e);
    expect(err).toBeInstanceOf(RedisUnavailable);
  });
  expect(open).toEqual([]);
});

test('a start-up connect to a Redis Cluster seed that refuses fails and leaves no timer or socket open', async () => {
  const port = await refusedPort();
  const open = await leftOpen(async () => {
    const err = await connectRedis({ clusterNodes: [`127.0.0.1:${port}`] }, 'refused-cluster', {}, 2000).catch((e: Error) => e);
    expect(err).toBeInstanceOf(RedisUnavailable);
  });
  expect(open).toEqual([]);
});

test('disconnectRedis closes a live connection, and one the server dropped (stopping its retries), leaving nothing open', async () => {
  const open = await leftOpen(async () => {
    const live = await connectRedis(TEST_REDIS_URL, 'live');
    const dropped = await connectRedis(TEST_REDIS_URL, 'dropped');
    const id = await dropped.client('ID');
    const reconnecting = new Promise((r) => dropped.once('reconnecting', r));
    await live.client('KILL', 'ID', String(id));
    await reconnecting;
    disconnectRedis(dropped);
    disconnectRedis(live);
    // The dropped one stays "reconnecting" in ioredis (its socket's close has passed); its retry timer is what must be gone.
    await until(() => live.status === 'end', 10_000, 'the live connection ended');
  });
  expect(open).toEqual([]);
});

test('disconnectRedis on a connection that has already ended is a no-op', async () => {
  const port = await refusedPort();
  const open = await leftOpen(async () => {
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
    r.on('error', () => undefined);
    await r.connect().catch(() => undefined);
    expect(r.status).toBe('end');
    disconnectRedis(r);
  });
  expect(open).toEqual([]);
});
