import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { driveSlowStreams, MAX_OPENING } from '../../bench/slow-stream';

/**
 * bench:peer's slow-stream driver opens its connections at most MAX_OPENING at a time
 * (test/bench/slow-stream.ts): 1,000 clients connecting at once overflowed a starved gateway's
 * listen backlog (511), and the kernel reset ~8% of those connections after 35-120 s. Here a server
 * holds every answer until more than MAX_OPENING connections wait for one (or 2 s have passed since
 * the first), and counts the connections it accepted that have had no answer yet: never more than
 * MAX_OPENING, and every stream still completes.
 */
describe('driveSlowStreams (bench helper)', () => {
  let server: Server;
  let unanswered = 0;
  let most = 0;
  const held: Array<() => void> = [];
  let released = false;
  const release = () => {
    released = true;
    for (const answer of held.splice(0)) answer();
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      const answer = () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const sock = res.socket as (typeof res.socket & { answered?: boolean }) | null;
        if (sock && !sock.answered) {
          sock.answered = true;
          unanswered--;
        }
        res.end('data: {"x":1}\n\ndata: [DONE]\n\n');
      };
      if (released) answer();
      else held.push(answer);
    });
    server.on('connection', () => {
      if (most === 0) setTimeout(release, 2000);
      unanswered++;
      most = Math.max(most, unanswered);
      if (unanswered > MAX_OPENING) release();
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1', backlog: 2048 }, r));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it(`keeps at most ${MAX_OPENING} new connections waiting for their first answer`, async () => {
    const clients = MAX_OPENING + 200;
    const port = (server.address() as AddressInfo).port;
    const run = await driveSlowStreams({ port, path: '/', headers: {}, body: () => '{}', pids: [process.pid] }, clients, 1);
    expect(run.failed).toBe(0);
    expect(run.completed).toBeGreaterThanOrEqual(clients);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(MAX_OPENING);
  });
});
