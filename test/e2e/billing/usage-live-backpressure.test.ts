import http from 'node:http';
import type { ServerResponse } from 'node:http';
import { liveChannel } from '../../../src/projections/usage/projection';
import { startTestServer, TestServer } from '../../support/harness';
import { until } from '../../support/wait';
import { newUser, TestUser } from './helpers';

/**
 * /usage/live is fed by Redis pub/sub, which cannot be paused. A reader that stops reading must
 * not make the server buffer every event in memory: frames wait for 'drain', and a reader too far
 * behind (LIVE_MAX_BEHIND_BYTES) gets its stream closed, to reconnect and refetch.
 */
let server: TestServer;
const liveResponses: ServerResponse[] = [];
beforeAll(async () => {
  server = await startTestServer();
  server.running.server!.on('request', (req: http.IncomingMessage, res: ServerResponse) => {
    if (req.url?.endsWith('/usage/live')) liveResponses.push(res);
  });
});
afterAll(() => server?.close());

interface Paused {
  res: http.IncomingMessage;
  server: ServerResponse;
  /** Resumes reading; resolves with every SSE block once the server ended the stream (or `ms` passed). */
  drain(ms: number): Promise<string[]>;
  close(): void;
}

async function openPaused(u: TestUser, ws: string): Promise<Paused> {
  const before = liveResponses.length;
  const req = http.get(`${server.url}/v1/workspaces/${ws}/usage/live`, { headers: u.auth });
  const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
  expect(res.statusCode).toBe(200);
  res.pause();
  await until(() => liveResponses.length > before);
  // The subscription is made after the headers: wait until the server listens on the channel.
  const channel = liveChannel((...p) => server.services.ks.shared(...p), ws);
  await until(async () => ((await server.services.redis.pubsub('NUMSUB', channel)) as [string, number])[1] > 0);
  return {
    res,
    server: liveResponses[liveResponses.length - 1],
    async drain(ms) {
      const blocks: string[] = [];
      let buf = '';
      res.on('data', (d: Buffer) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          blocks.push(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      });
      const ended = new Promise<void>((resolve) => res.on('close', resolve));
      res.resume();
      await Promise.race([ended, new Promise((r) => setTimeout(r, ms))]);
      return blocks;
    },
    close: () => req.destroy(),
  };
}

/** Publishes `n` usage messages of about `size` bytes each, as the usage projection would. */
async function flood(ws: string, n: number, size: number, watch: ServerResponse): Promise<number> {
  const channel = liveChannel((...p) => server.services.ks.shared(...p), ws);
  let maxBuffered = 0;
  const sample = setInterval(() => (maxBuffered = Math.max(maxBuffered, watch.writableLength)), 2);
  try {
    for (let i = 0; i < n; i++) {
      await server.services.redis.publish(channel, JSON.stringify({ i, pad: 'x'.repeat(size) }));
      maxBuffered = Math.max(maxBuffered, watch.writableLength);
    }
    // Let the subscriber connection deliver what is still in flight.
    await new Promise((r) => setTimeout(r, 200));
    maxBuffered = Math.max(maxBuffered, watch.writableLength);
  } finally {
    clearInterval(sample);
  }
  return maxBuffered;
}

const usageIndexes = (blocks: string[]) =>
  blocks.filter((b) => b.startsWith('event: usage')).map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)).i as number);

describe('the live usage stream under a slow reader', () => {
  test('a reader that stops reading does not make the server buffer the flood; its stream is closed', async () => {
    const u = await newUser(server, 'slowlive');
    const live = await openPaused(u, u.personalWs);
    // 32 MB published at a reader that reads nothing.
    const maxBuffered = await flood(u.personalWs, 500, 64 * 1024, live.server);
    // Without backpressure every frame is written at once and the server holds tens of MB for this one reader.
    expect(maxBuffered).toBeLessThan(2 * 1024 * 1024);
    const blocks = await live.drain(10_000);
    const got = usageIndexes(blocks);
    expect(got.length).toBeLessThan(500);
    // What it did get is in order, without gaps, and then it is told why the stream ended.
    expect(got).toEqual(got.map((_, i) => i));
    expect(blocks[blocks.length - 1]).toMatch(/^event: closed\ndata: \{"detail":"This stream fell too far behind/);
    live.close();
  });

  test('a reader that pauses but stays within the limit gets every event, in order', async () => {
    const u = await newUser(server, 'pauselive');
    const live = await openPaused(u, u.personalWs);
    // 300 × 1 KB: more than the socket takes before 'drain' is due, less than the limit.
    await flood(u.personalWs, 300, 1024, live.server);
    const blocks = await live.drain(1000);
    expect(usageIndexes(blocks)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    live.close();
  });
});
