import { startTestServer, type TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, fund, newUser as signedUp, type TestUser } from '../../accounts/e2e/helpers';
import { until } from '../../support/wait';
import { Receiver } from './receiver';
import { expectMatchesContract } from '../../support/contract';
import { registerEndpoint as registerRoute, listDeliveries as deliveriesRoute } from '../../../src/webhooks/routes/webhook-schemas';

/**
 * Outgoing webhooks end to end: real Redis, real BullMQ, the whole service in-process, and a receiver
 * on 127.0.0.1 (so WEBHOOKS_ALLOW_PRIVATE_TARGETS=true) that verifies every delivery with the
 * standardwebhooks package. Retries are quick (WEBHOOKS_RETRY_BASE_MS=20, 4 attempts).
 */

let server: TestServer;
const receivers: Receiver[] = [];
beforeAll(async () => {
  server = await startTestServer({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOKS_RETRY_BASE_MS: '20', WEBHOOKS_MAX_ATTEMPTS: '4' });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await server?.close();
});

/** A user whose personal workspace is funded (a key needs it); the funding events come before any endpoint. */
async function newUser(s: TestServer, label: string): Promise<TestUser> {
  const u = await signedUp(s, label);
  await fund(s, u.personalWs);
  return u;
}

async function receiver(answer: (nth: number) => number): Promise<Receiver> {
  const r = new Receiver(answer);
  await r.start();
  receivers.push(r);
  return r;
}

async function register(u: TestUser, ws: string, r: Receiver, eventTypes = ['key.created', 'key.deleted']) {
  const res = await api(server).post(`/v1/workspaces/${ws}/webhooks`).set(u.auth).send({ url: r.url, eventTypes });
  expect(res.status).toBe(201);
  await expectMatchesContract(res, registerRoute);
  expect(res.body.secret).toMatch(/^whsec_/);
  r.secret = res.body.secret;
  return res.body.endpointId as string;
}

const createKey = async (u: TestUser, ws: string, name = 'hook key') => {
  const res = await api(server).post(`/v1/workspaces/${ws}/keys`).set(u.auth).send({ name });
  expect([res.status, res.body]).toEqual([201, expect.anything()]);
  return res.body.keyId as string;
};

describe('outgoing webhooks', () => {
  test('a receiver that fails 3 times, then succeeds, gets exactly one successful, verified delivery per event id', async () => {
    const u = await newUser(server, 'hooks');
    const ws = u.personalWs;
    const r = await receiver((nth) => (nth < 3 ? 500 : 204));
    const endpointId = await register(u, ws, r);
    const keyA = await createKey(u, ws, 'key a');
    const keyB = await createKey(u, ws, 'key b');
    const ok = () => r.received.filter((x) => x.answered === 204);
    await until(() => ok().length >= 2, 30_000, 'two successful deliveries');
    const ids = ok().map((x) => x.headers['webhook-id']);
    expect(new Set(ids).size).toBe(2);
    // Every attempt of an event carried the same webhook-id and verified with the secret shown once.
    expect(r.received.every((x) => x.verified)).toBe(true);
    for (const id of ids) expect(r.received.filter((x) => x.headers['webhook-id'] === id)).toHaveLength(4);
    const payloads = ok().map((x) => JSON.parse(x.body));
    expect(payloads.map((p) => p.type)).toEqual(['key.created', 'key.created']);
    expect(payloads.map((p) => p.data.keyId).sort()).toEqual([keyA, keyB].sort());
    expect(JSON.stringify(payloads)).not.toMatch(/keyHash|secret/i);

    const list = await until(
      async () => {
        const res = await api(server).get(`/v1/workspaces/${ws}/webhooks/${endpointId}/deliveries`).set(u.auth);
        return res.body.deliveries?.every((d: { status: string }) => d.status === 'succeeded') && res.body.deliveries.length === 2
          ? res
          : null;
      },
      10_000,
      'the delivery log to show both succeeded',
    );
    await expectMatchesContract(list, deliveriesRoute);
    expect(list.body.deliveries[0].attempts.map((a: { status: number }) => a.status)).toEqual([500, 500, 500, 204]);

    // Resend one: the same webhook-id and body, signed anew; still verifies.
    const id = list.body.deliveries[0].deliveryId;
    const before = r.received.length;
    const resend = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/deliveries/${id}/resend`).set(u.auth);
    expect(resend.status).toBe(202);
    await until(() => r.received.length > before, 10_000, 'the resend');
    const again = r.received.at(-1)!;
    expect(again.headers['webhook-id']).toBe(id);
    expect(again.verified).toBe(true);
  });

  test('a receiver that always fails ends with the endpoint disabled and the admins told', async () => {
    const u = await newUser(server, 'failing');
    const ws = u.personalWs;
    const r = await receiver(() => 503);
    const endpointId = await register(u, ws, r);
    await createKey(u, ws);
    const list = await until(
      async () => {
        const res = await api(server).get(`/v1/workspaces/${ws}/webhooks`).set(u.auth);
        return res.body.endpoints?.[0]?.status === 'disabled' ? res : null;
      },
      30_000,
      'the endpoint to be disabled',
    );
    expect(list.body.endpoints[0]).toMatchObject({ endpointId, status: 'disabled' });
    expect(list.body.endpoints[0].disabledReason).toMatch(/HTTP 503/);
    expect(r.received).toHaveLength(4);
    const types = (await server.services.store.readStream(`webhooks-${ws}`)).map((e) => e.type);
    expect(types).toEqual(['WebhookEndpointRegistered', 'WebhookEndpointDisabled']);
    const me = await until(
      async () => {
        const res = await api(server).get('/v1/me').set(u.auth);
        return JSON.stringify(res.body).includes('webhook_endpoint_disabled') ? res : null;
      },
      10_000,
      'the notice',
    );
    expect(JSON.stringify(me.body)).toContain(r.url);
    // Nothing more is sent to a disabled endpoint.
    await createKey(u, ws, 'key later');
    const resend = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/deliveries/x/resend`).set(u.auth);
    expect(resend.status).toBe(409);
  });

  test('only subscribed types are sent; a rotated secret signs from then on; a deleted endpoint gets nothing', async () => {
    const u = await newUser(server, 'rotate');
    const ws = u.personalWs;
    const r = await receiver(() => 200);
    const endpointId = await register(u, ws, r, ['key.deleted']);
    const keyId = await createKey(u, ws);
    const rot = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/rotate-secret`).set(u.auth);
    expect(rot.status).toBe(200);
    expect(rot.body.secret).not.toBe(r.secret);
    r.secret = rot.body.secret;
    expect((await api(server).delete(`/v1/workspaces/${ws}/keys/${keyId}`).set(u.auth)).status).toBe(204);
    await until(() => r.received.length >= 1, 10_000, 'the key.deleted delivery');
    expect(JSON.parse(r.received[0].body).type).toBe('key.deleted');
    expect(r.received[0].verified).toBe(true);
    const listed = await api(server).get(`/v1/workspaces/${ws}/webhooks`).set(u.auth);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    expect((await api(server).delete(`/v1/workspaces/${ws}/webhooks/${endpointId}`).set(u.auth)).status).toBe(204);
    expect((await api(server).get(`/v1/workspaces/${ws}/webhooks`).set(u.auth)).body.endpoints).toEqual([]);
  });

  test('bad input: not http(s), unknown event type, no event types, a member instead of an admin; nothing is written', async () => {
    const u = await newUser(server, 'bad');
    const ws = u.personalWs;
    const head = await server.services.store.headPosition();
    const written = async () => expect(await server.services.store.headPosition()).toBe(head);
    const post = (body: object) => api(server).post(`/v1/workspaces/${ws}/webhooks`).set(u.auth).send(body);
    const ftp = await post({ url: 'ftp://example.com/x', eventTypes: ['key.created'] });
    expect(ftp.status).toBe(422);
    expect(ftp.body.detail[0]).toMatchObject({ loc: ['body', 'url'], msg: 'url must be an absolute http or https URL' });
    const unknown = await post({ url: 'https://example.com/x', eventTypes: ['key.exploded'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0].loc).toEqual(['body', 'eventTypes']);
    expect(unknown.body.detail[0].msg).toMatch(/Unknown event type key\.exploded/);
    const none = await post({ url: 'https://example.com/x', eventTypes: [] });
    expect(none.status).toBe(422);
    await written();
    // Members may not manage webhooks.
    const team = await createWorkspace(server, u, 'Hooks team');
    const m = await signedUp(server, 'member');
    await addMember(server, u, team, m);
    const head2 = await server.services.store.headPosition();
    const byMember = await api(server)
      .post(`/v1/workspaces/${team}/webhooks`)
      .set(m.auth)
      .send({ url: 'https://example.com/x', eventTypes: ['key.created'] });
    expect(byMember.status).toBe(403);
    expect((await api(server).get(`/v1/workspaces/${team}/webhooks`).set(m.auth)).status).toBe(403);
    expect(await server.services.store.headPosition()).toBe(head2);
  });
});

describe('SSRF guard (private targets not allowed, the default)', () => {
  let guarded: TestServer;
  beforeAll(async () => {
    guarded = await startTestServer();
  });
  afterAll(async () => guarded?.close());

  test('private, loopback and link-local targets are refused with 422 naming url; nothing is written', async () => {
    const u = await signedUp(guarded, 'ssrf');
    const head = await guarded.services.store.headPosition();
    const urls = [
      'http://127.0.0.1:9/x',
      'http://localhost/x',
      'http://10.1.2.3/x',
      'http://192.168.0.10/x',
      'http://169.254.169.254/latest',
      'http://[::1]/x',
      'http://[fe80::1]/x',
      'http://[::ffff:127.0.0.1]/x',
    ];
    // The adversarial run's finding F-1: documentation and special ranges, and IPv4 carried in IPv6.
    urls.push(
      'http://192.0.2.1/x',
      'http://198.51.100.1/x',
      'http://203.0.113.1/x',
      'http://192.88.99.1/x',
      'http://[::127.0.0.1]/x',
      'http://[64:ff9b::127.0.0.1]/x',
      'http://[2002:c000:201::1]/x',
    );
    for (const url of urls) {
      const res = await api(guarded)
        .post(`/v1/workspaces/${u.personalWs}/webhooks`)
        .set(u.auth)
        .send({ url, eventTypes: ['key.created'] });
      expect([url, res.status, res.body.detail?.[0]?.loc]).toEqual([url, 422, ['body', 'url']]);
      expect(res.body.detail[0].msg).toMatch(/^url points to .*, in .*: a webhook must reach a public address$/);
    }
    expect(await guarded.services.store.headPosition()).toBe(head);
  });
});
