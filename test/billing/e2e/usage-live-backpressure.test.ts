import http from 'node:http';
import type { ServerResponse } from 'node:http';
import { liveChannel } from '../../../src/billing/projections/usage/projection';
import { startTestServer, TestServer } from '../../support/harness';
import { sleep, until } from '../../support/wait';
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
  /** Resumes reading; resolves with the SSE blocks read once `enough` holds for them, the stream ended, or `ms` passed. */
  drain(enough: (blocks: string[]) => boolean, ms: number): Promise<string[]>;
  close(): void;
}

async function openPaused(u: TestUser, ws: string): Promise<Paused> {
  const before = liveResponses.length;
  const req = http.get(`${server.url}/v1/workspaces/${ws}/usage/live`, { headers: u.auth });
  const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
  expect(res.statusCode).toBe(200);
  await until(() => liveResponses.length > before);
  // The subscription is made after the headers: probe until a message comes through, then stop reading.
  const channel = liveChannel((...p) => server.services.ks.shared(...p), ws);
  let through = false;
  const probe = (d: Buffer) => (through ||= d.toString().includes('"probe"'));
  res.on('data', probe);
  await until(
    async () => (await server.services.redis.spublish(channel, JSON.stringify({ probe: true })), through),
    5000,
    'the stream to carry a message',
    50,
  );
  res.off('data', probe);
  res.pause();
  return {
    res,
    server: liveResponses[liveResponses.length - 1],
    async drain(enough, ms) {
      const blocks: string[] = [];
      let buf = '';
      let done: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (done = resolve));
      res.on('data', (d: Buffer) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          blocks.push(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
        if (enough(blocks)) done();
      });
      res.on('close', done);
      res.resume();
      const timer = setTimeout(done, ms);
      await finished;
      clearTimeout(timer);
      return blocks;
    },
    close: () => req.destroy(),
  };
}

/**
 * Publishes up to `n` usage messages of about `size` bytes each, as the usage projection would, in
 * batches the subscriber connection can keep up with (Redis drops a pub/sub client whose output
 * buffer passes 32 MB). Stops early once the server ended the stream or holds over 4 MiB for it.
 * Returns how many it published and the most the server had buffered for the response.
 */
async function flood(ws: string, n: number, size: number, watch: ServerResponse): Promise<{ published: number; maxBuffered: number }> {
  const channel = liveChannel((...p) => server.services.ks.shared(...p), ws);
  let maxBuffered = 0;
  const look = () => (maxBuffered = Math.max(maxBuffered, watch.writableLength));
  const sample = setInterval(look, 2);
  let published = 0;
  try {
    while (published < n && !watch.writableEnded && maxBuffered < 4 * 1024 * 1024) {
      await server.services.redis.spublish(channel, JSON.stringify({ i: published++, pad: 'x'.repeat(size) }));
      look();
      if (published % 8 === 0) await sleep(5);
    }
    // Let the subscriber connection deliver what is still in flight.
    await sleep(200);
    look();
  } finally {
    clearInterval(sample);
  }
  return { published, maxBuffered };
}

/** The flood's message numbers, in the order they arrived (probes left out). */
const usageIndexes = (blocks: string[]) =>
  blocks
    .filter((b) => b.startsWith('event: usage'))
    .map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)) as { i?: number })
    .filter((m) => m.i !== undefined)
    .map((m) => m.i!);

describe('the live usage stream under a slow reader', () => {
  test('a reader that stops reading does not make the server buffer the flood; its stream is closed', async () => {
    const u = await newUser(server, 'slowlive');
    const live = await openPaused(u, u.personalWs);
    // Up to 32 MB published at a reader that reads nothing.
    const { published, maxBuffered } = await flood(u.personalWs, 500, 64 * 1024, live.server);
    // Without backpressure every frame is written at once and the server holds megabytes for this one reader.
    expect(maxBuffered).toBeLessThan(2 * 1024 * 1024);
    expect(live.server.writableEnded).toBe(true);
    const blocks = await live.drain(() => false, 15_000);
    const got = usageIndexes(blocks);
    expect(got.length).toBeLessThan(published);
    // What it did get is in order, without gaps, and then it is told why the stream ended.
    expect(got).toEqual(got.map((_, i) => i));
    expect(blocks[blocks.length - 1]).toMatch(/^event: closed\ndata: \{"detail":"This stream fell too far behind/);
    live.close();
  });

  test('a reader that pauses but stays within the limit gets every event, in order', async () => {
    const u = await newUser(server, 'pauselive');
    const live = await openPaused(u, u.personalWs);
    // 300 × 1 KB: more than the socket takes before 'drain' is due, less than the limit.
    expect((await flood(u.personalWs, 300, 1024, live.server)).published).toBe(300);
    const blocks = await live.drain((b) => usageIndexes(b).length >= 300, 15_000);
    expect(usageIndexes(blocks)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    live.close();
  });
});
