import http from 'node:http';
import { startTestServer, TestServer } from '../../support/harness';

/**
 * The API's idle keep-alive timeout (HTTP_KEEP_ALIVE_TIMEOUT_MS) is announced to clients and kept.
 * Node's own default is 5 s, below every common load balancer's idle timeout: the balancer then
 * reuses a connection at the moment tollgate closes it, and the request fails with ECONNRESET.
 */
function get(url: string, agent: http.Agent): Promise<{ keepAlive: string | undefined; socket: import('node:net').Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/healthz`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ keepAlive: res.headers['keep-alive'] as string | undefined, socket: req.socket! }));
    });
    req.on('error', reject);
  });
}

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

test('by default an idle connection is kept 65 s, above a load balancer’s 60 s', async () => {
  const server = await startTestServer();
  servers.push(server);
  const agent = new http.Agent({ keepAlive: true });
  try {
    expect((await get(server.url, agent)).keepAlive).toBe('timeout=65');
  } finally {
    agent.destroy();
  }
});

test('a configured timeout is announced, and the server closes the idle connection once it has passed', async () => {
  const server = await startTestServer({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '2500' });
  servers.push(server);
  const agent = new http.Agent({ keepAlive: true });
  try {
    const first = await get(server.url, agent);
    expect(first.keepAlive).toBe('timeout=2'); // Node announces whole seconds, rounded down
    const closedAt = new Promise<number>((r) => first.socket.once('close', () => r(Date.now())));
    const idleSince = Date.now();
    // The limit is cleared once the close comes: a pending 15 s timer kept the jest worker from exiting.
    let limit: NodeJS.Timeout | undefined;
    const closed = await Promise.race([closedAt, new Promise<number>((r) => (limit = setTimeout(() => r(-1), 15_000)))]);
    clearTimeout(limit);
    expect(closed).toBeGreaterThanOrEqual(idleSince + 2400);
  } finally {
    agent.destroy();
  }
});

test('a timeout outside 1 s to 10 min is refused at start, naming the setting', async () => {
  await expect(startTestServer({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '500' })).rejects.toThrow(/HTTP_KEEP_ALIVE_TIMEOUT_MS/);
});
