import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { until } from '../../support/wait';
import { startTestServer, TestServer } from '../../support/harness';
import { api, newUser } from '../../accounts/e2e/helpers';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** A request that is known (InferenceRequested) but never billed: the lookup waits for its debit. */
async function unbilledRequest(ws: string) {
  const requestId = randomUUID();
  await server.services.store.append(
    streams.inference(requestId),
    [{ id: randomUUID(), type: 'InferenceRequested', data: { requestId, workspaceId: ws, keyId: 'k', config: 'service_3_pi' } }],
    { expectedRevision: 'no_stream' },
  );
  return requestId;
}

describe('GET /portal/workspaces/:ws/requests/:id holds no connection for nothing', () => {
  test('an unknown request id is 404 at once (it used to poll the store for 3 s)', async () => {
    const u = await newUser(server, 'lookup');
    const id = randomUUID();
    // Counted, not timed: the old poll read the request's stream every 100 ms for 3 s, and a time
    // limit below 3 s was a race on a loaded machine (it took ~2 s there). One read is "at once".
    let reads = 0;
    const readStream = server.services.store.readStream;
    server.services.store.readStream = function (this: unknown, ...args: Parameters<typeof readStream>) {
      if (args[0] === streams.inference(id)) reads++;
      return readStream.apply(this, args);
    } as typeof readStream;
    try {
      const res = await api(server).get(`/portal/workspaces/${u.personalWs}/requests/${id}`).set(u.auth);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Request not found' });
    } finally {
      server.services.store.readStream = readStream;
    }
    expect(reads).toBe(1);
  });

  test('a user holds at most 4 waiting lookups; the fifth is 429 at once', async () => {
    const u = await newUser(server, 'lookupcap');
    const ids = await Promise.all(Array.from({ length: 5 }, () => unbilledRequest(u.personalWs)));
    // The fifth goes once all four hold their slot: each has read its request's stream (after taking
    // the slot). 300 ms stood in for that, and a loaded machine could let the fifth in first.
    const read = new Set<string>();
    const readStream = server.services.store.readStream;
    server.services.store.readStream = function (this: unknown, ...args: Parameters<typeof readStream>) {
      read.add(args[0]);
      return readStream.apply(this, args);
    } as typeof readStream;
    let waiting: Promise<{ status: number; body: { detail?: unknown } }>[];
    try {
      waiting = ids.slice(0, 4).map((id) =>
        api(server)
          .get(`/portal/workspaces/${u.personalWs}/requests/${id}`)
          .set(u.auth)
          .then((r) => r),
      );
      await until(() => ids.slice(0, 4).every((id) => read.has(streams.inference(id))), 10_000, 'the four lookups to wait');
    } finally {
      server.services.store.readStream = readStream;
    }
    const fifth = await api(server).get(`/portal/workspaces/${u.personalWs}/requests/${ids[4]}`).set(u.auth);
    expect(fifth.status).toBe(429);
    expect(fifth.headers['retry-after']).toBe('1');
    const done = await Promise.all(waiting);
    expect(done.map((r) => [r.status, r.body.detail])).toEqual(Array(4).fill([404, 'Request not billed yet']));
  });
});
