import http from 'node:http';
import { startTestServer, TestServer } from '../../support/harness';
import { isProbe, untilLiveSubscribed } from '../../support/live-usage';
import { addMember, createWorkspace, login } from '../../accounts/e2e/helpers';
import { api, newUser, TestUser } from './helpers';
import { debit } from '../../support/debit';
import { until } from '../../support/wait';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LIVE_STREAMS_PER_USER: '2' });
});
afterAll(() => server?.close());

interface Live {
  status: number;
  usage: string[];
  blocks: string[];
  ended: Promise<number>;
  close(): void;
}

async function openLive(u: TestUser, ws: string): Promise<Live> {
  const req = http.get(`${server.url}/v1/workspaces/${ws}/usage/live`, { headers: u.auth });
  const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
  const live: Live = { status: res.statusCode ?? 0, usage: [], blocks: [], ended: null!, close: () => req.destroy() };
  live.ended = new Promise((resolve) => res.on('close', () => resolve(Date.now())));
  if (live.status !== 200) {
    res.resume();
    return live;
  }
  const probes: string[] = [];
  let buf = '';
  res.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (isProbe(block)) {
        probes.push(block);
        continue;
      }
      live.blocks.push(block);
      if (block.includes('event: usage')) live.usage.push(block);
    }
  });
  await untilLiveSubscribed(server.services, ws, () => probes);
  return live;
}

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms).unref())]);

describe('the live usage stream subscribes before it answers', () => {
  test('the 200 comes only once the subscription is confirmed, so a debit made after it is pushed', async () => {
    const u = await newUser(server, 'livesubscribe');
    const hub = server.services.liveUsage;
    const listen = hub.listen.bind(hub);
    let confirmedAt = 0;
    // A slow SUBSCRIBE (a loaded Redis): if the headers went out first, they would arrive before it.
    hub.listen = async (ws, fn) => {
      await new Promise((r) => setTimeout(r, 300));
      const stop = await listen(ws, fn);
      confirmedAt = Date.now();
      return stop;
    };
    const req = http.get(`${server.url}/v1/workspaces/${u.personalWs}/usage/live`, { headers: u.auth });
    try {
      const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
      const answeredAt = Date.now();
      expect(res.statusCode).toBe(200);
      expect(confirmedAt).toBeGreaterThan(0);
      expect(answeredAt).toBeGreaterThanOrEqual(confirmedAt);
      const blocks: string[] = [];
      res.on('data', (d: Buffer) => blocks.push(...d.toString().split('\n\n')));
      // No probe: the 200 itself is the guarantee.
      await debit(server.services, u.personalWs, { keyId: 'k' });
      await until(() => blocks.some((b) => b.includes('event: usage')), 10_000, 'the debit to be pushed');
    } finally {
      req.destroy();
      hub.listen = listen;
    }
  });
});

describe('the live usage stream follows access, not the connection', () => {
  test('a member removed while streaming: the stream closes and carries nothing after', async () => {
    const admin = await newUser(server, 'liveadmin');
    const member = await newUser(server, 'livemember');
    const ws = await createWorkspace(server, admin, 'Live team');
    await addMember(server, admin, ws, member);
    const live = await openLive(member, ws);
    expect(live.status).toBe(200);
    await debit(server.services, ws, { keyId: 'k' });
    const removed = await api(server).delete(`/v1/workspaces/${ws}/members/${member.userId}`).set(admin.auth);
    expect(removed.status).toBe(204);
    const removedAt = Date.now();
    // The recheck runs every 500 ms: a second when quiet. The bound leaves room for event-loop stalls
    // of seconds under load; without the recheck the stream would stay open for good.
    const endedAt = await within(live.ended, 10_000);
    expect(endedAt - removedAt).toBeLessThan(5000);
    await debit(server.services, ws, { keyId: 'k' });
    expect(live.usage).toHaveLength(1);
    expect(live.blocks.some((b) => b.startsWith('event: closed'))).toBe(true);
  });

  test('removed, then calls at once: the removed member stream gets nothing after the removal, in event order', async () => {
    const admin = await newUser(server, 'orderadmin');
    const member = await newUser(server, 'ordermember');
    const ws = await createWorkspace(server, admin, 'Ordered team');
    await addMember(server, admin, ws, member);
    const watcher = await openLive(admin, ws);
    const live = await openLive(member, ws);
    await debit(server.services, ws, { keyId: 'before' });
    await until(() => live.usage.length === 1, 10_000, 'the debit before the removal');
    expect((await api(server).delete(`/v1/workspaces/${ws}/members/${member.userId}`).set(admin.auth)).status).toBe(204);
    await Promise.all(Array.from({ length: 6 }, () => debit(server.services, ws, { keyId: 'after' })));
    // The admin's stream carries all six: they were published, and after the removal.
    await until(() => watcher.usage.filter((b) => b.includes('"after"')).length === 6, 10_000, 'the six debits on the admin stream');
    expect(live.usage.filter((b) => b.includes('"after"'))).toEqual([]);
    expect(live.usage).toHaveLength(1);
    await within(live.ended, 10_000);
    // Closed by the marker ("(removed)"), or by the backstop re-check if it ran between the two projections.
    expect(live.blocks.at(-1)).toMatch(
      /^event: closed\ndata: \{"detail":"Access to this workspace ended \((removed|logged out or removed)\)"\}/,
    );
    watcher.close();
  });

  test('a member who leaves: their stream closes before the next debit of the workspace', async () => {
    const admin = await newUser(server, 'leaveadmin');
    const member = await newUser(server, 'leavemember');
    const ws = await createWorkspace(server, admin, 'Left team');
    await addMember(server, admin, ws, member);
    const watcher = await openLive(admin, ws);
    const live = await openLive(member, ws);
    expect((await api(server).post(`/v1/workspaces/${ws}/leave`).set(member.auth)).status).toBeLessThan(300);
    await Promise.all(Array.from({ length: 3 }, () => debit(server.services, ws, { keyId: 'after' })));
    await until(() => watcher.usage.length === 3, 10_000, 'the debits on the admin stream');
    expect(live.usage).toEqual([]);
    await within(live.ended, 10_000);
    expect(live.blocks.at(-1)).toMatch(/Access to this workspace ended \((left|logged out or removed)\)/);
    watcher.close();
  });

  test('a logout, then calls at once: that session stream gets nothing after the logout; another session of the user stays open', async () => {
    const u = await newUser(server, 'orderlogout');
    const token = await login(server, u.email);
    const second = { ...u, token, auth: { Authorization: `Bearer ${token}` } };
    const kept = await openLive(second, u.personalWs);
    const live = await openLive(u, u.personalWs);
    expect((await api(server).post('/v1/logout').set(u.auth)).status).toBe(204);
    await Promise.all(Array.from({ length: 4 }, () => debit(server.services, u.personalWs, { keyId: 'after' })));
    await until(() => kept.usage.length === 4, 10_000, 'the debits on the other session');
    expect(live.usage).toEqual([]);
    await within(live.ended, 10_000);
    expect(live.blocks.at(-1)).toMatch(/Access to this workspace ended \((logged out|logged out or removed)\)/);
    kept.close();
  });

  test('a logout while streaming closes the stream at the next recheck', async () => {
    const u = await newUser(server, 'livelogout');
    const live = await openLive(u, u.personalWs);
    expect((await api(server).post('/v1/logout').set(u.auth)).status).toBe(204);
    const loggedOutAt = Date.now();
    const endedAt = await within(live.ended, 10_000);
    expect(endedAt - loggedOutAt).toBeLessThan(5000); // see above: a second when quiet
    await debit(server.services, u.personalWs, { keyId: 'k' });
    expect(live.usage).toHaveLength(0);
  });

  test('at most LIVE_STREAMS_PER_USER open streams per user: the next is 429; closing one frees a slot', async () => {
    const u = await newUser(server, 'livecap');
    const a = await openLive(u, u.personalWs);
    const b = await openLive(u, u.personalWs);
    expect([a.status, b.status]).toEqual([200, 200]);
    const c = await api(server).get(`/v1/workspaces/${u.personalWs}/usage/live`).set(u.auth);
    expect(c.status).toBe(429);
    expect(c.body.detail).toMatch(/Too many live usage streams open at once \(at most 2\)/);
    expect(c.headers['retry-after']).toBe('1');
    a.close();
    await a.ended;
    // The client sees its socket close before the server has handled the close and released the
    // slot: ask again until the slot is free (a slot never freed times out here).
    let d = await openLive(u, u.personalWs);
    for (const deadline = Date.now() + 10_000; d.status === 429 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 50));
      d = await openLive(u, u.personalWs);
    }
    expect(d.status).toBe(200);
    b.close();
    d.close();
  });
});
