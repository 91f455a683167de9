import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { startTestServer, TestServer } from '../../support/harness';
import { isProbe, untilLiveSubscribed } from '../../support/live-usage';
import { api, newUser, TestUser } from './helpers';
import { debit } from '../../support/debit';
import { expectMatchesContract } from '../../support/contract';
import { usageSeries } from '../../../src/billing/routes/usage-schemas';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const usage = (u: TestUser, ws: string, q: string) => api(server).get(`/v1/workspaces/${ws}/usage?${q}`).set(u.auth);

describe('usage series', () => {
  test('minute, hour and day buckets (UTC) with requests, tokens and exact cost; grouped by key and model', async () => {
    const u = await newUser(server, 'usage');
    const ws = u.personalWs;
    await debit(server.services, ws, { keyId: 'key-a', config: 'service_3_pi', inputTokens: 100, outputTokens: 10 }); // 0.00035 USD
    await debit(server.services, ws, { keyId: 'key-a', config: 'service_3_productivity', inputTokens: 1000, outputTokens: 200 }); // 0.0045
    await debit(server.services, ws, { keyId: 'key-b', config: 'service_3_pi', inputTokens: 1, outputTokens: 1 }); // 0.0000125
    const total = await usage(u, ws, 'granularity=minute');
    expect(total.status).toBe(200);
    expect(total.body.granularity).toBe('minute');
    expect(total.body.series).toHaveLength(1);
    const s = total.body.series[0];
    expect(s.total).toEqual({ requests: 3, inputTokens: 1101, outputTokens: 211, cost: '0.0048625' });
    expect(s.points).toHaveLength(60);
    expect(s.points.reduce((n: number, p: { requests: number }) => n + p.requests, 0)).toBe(3);
    expect(s.points[0].t).toMatch(/:00\.000Z$/);

    const byKey = await usage(u, ws, 'granularity=hour&groupBy=key');
    expect(byKey.body.series.map((x: { keyId: string; total: unknown }) => [x.keyId, x.total])).toEqual([
      ['key-a', { requests: 2, inputTokens: 1100, outputTokens: 210, cost: '0.00485' }],
      ['key-b', { requests: 1, inputTokens: 1, outputTokens: 1, cost: '0.0000125' }],
    ]);
    expect(byKey.body.series[0].points).toHaveLength(24);
    for (const res of [total, byKey]) await expectMatchesContract(res, usageSeries);

    const byModel = await usage(u, ws, 'granularity=day&groupBy=model');
    expect(byModel.body.series.map((x: { model: string; total: { requests: number } }) => [x.model, x.total.requests])).toEqual([
      ['service_3_pi', 2],
      ['service_3_productivity', 1],
    ]);
    expect(byModel.body.series[0].points).toHaveLength(30);
    await expectMatchesContract(byModel, usageSeries);

    const nowS = Math.floor(Date.now() / 1000);
    const from = new Date((nowS - 5 * 3600) * 1000).toISOString();
    const explicit = await usage(u, ws, `granularity=hour&from=${from}&to=${nowS + 3600}`);
    expect(explicit.body.series[0].points.length).toBeGreaterThanOrEqual(6);
    expect(explicit.body.series[0].total.requests).toBe(3);
  });

  test('validation: granularity, times, and at most 1500 points', async () => {
    const u = await newUser(server, 'usage');
    expect((await usage(u, u.personalWs, 'granularity=week')).status).toBe(422);
    expect((await usage(u, u.personalWs, 'from=yesterday')).status).toBe(422);
    expect((await usage(u, u.personalWs, 'granularity=minute&from=0&to=999999')).status).toBe(422);
    expect((await usage(u, u.personalWs, 'from=2000&to=1000')).status).toBe(422);
    const other = await newUser(server, 'other');
    expect((await usage(other, u.personalWs, '')).status).toBe(404);
  });

  test('GET usage/live pushes each debited request as a server-sent event', async () => {
    const u = await newUser(server, 'live');
    const ws = u.personalWs;
    const received: string[] = [];
    const probes: string[] = [];
    const req = http.get(`${server.url}/v1/workspaces/${ws}/usage/live`, { headers: u.auth });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    let buf = '';
    const got = new Promise<void>((resolve) =>
      res.on('data', (d: Buffer) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (isProbe(block)) probes.push(block);
          else if (block.includes('event: usage')) received.push(block);
          if (received.length === 2) resolve();
        }
      }),
    );
    await untilLiveSubscribed(server.services, ws, () => probes);
    const a = await debit(server.services, ws, { keyId: 'key-live', config: 'service_3_pi', inputTokens: 10, outputTokens: 5 });
    await debit(server.services, randomUUID(), { keyId: 'other-ws', config: 'service_3_pi', inputTokens: 1, outputTokens: 1 }); // another workspace: not pushed here
    const b = await debit(server.services, ws, { keyId: 'key-live', config: 'service_3_productivity', inputTokens: 20, outputTokens: 0 });
    await got;
    req.destroy();
    const events = received.map((blk) =>
      JSON.parse(
        blk
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
      ),
    );
    expect(events.map((e) => [e.requestId, e.keyId, e.model, e.inputTokens, e.outputTokens, e.cost])).toEqual([
      [a, 'key-live', 'service_3_pi', 10, 5, '0.000075'],
      [b, 'key-live', 'service_3_productivity', 20, 0, '0.00005'],
    ]);
  });
});
