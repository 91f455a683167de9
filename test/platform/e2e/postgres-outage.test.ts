/**
 * A running service over PostgreSQL whose database goes away and comes back. The network between
 * them is a TCP relay in this test (the server itself is shared by other tests and stays up): cutting
 * it drops every connection and refuses new ones, as a failed database host would.
 * While it is gone: 503 with a detail, and no inference reply that was not metered. After: it heals.
 */
import { createServer, Server, Socket, connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { authHeaders, inferenceEvents, seedFundedKey } from '../../inference/int/support/seed';
import { startTestServer, TestServer } from '../../support/harness';
import { POLICY_VERSION } from '../../support/policy';
import { createTestDatabase, TEST_DATABASE_URL, TestDatabase, withDatabase } from '../../support/postgres';

const maybe = TEST_DATABASE_URL ? describe : describe.skip;

/** Relays 127.0.0.1:<port> to the PostgreSQL server; cut() drops everything, restore() listens again. */
class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;
  constructor(private readonly target: { host: string; port: number }) {}

  async listen(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

maybe('PostgreSQL outage while running', () => {
  let db: TestDatabase;
  let relay: Relay;
  let server: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase('outage');
    const target = new URL(TEST_DATABASE_URL!);
    relay = new Relay({ host: target.hostname, port: Number(target.port || 5432) });
    await relay.listen();
    const viaRelay = new URL(withDatabase(TEST_DATABASE_URL!, db.name));
    viaRelay.host = `127.0.0.1:${relay.port}`;
    server = await startTestServer({ EVENT_STORE: 'postgres', DATABASE_URL: viaRelay.toString(), SWEEPER_ENABLED: 'false' });
  });
  afterAll(async () => {
    await server?.close();
    await relay?.cut().catch(() => undefined);
    await db?.drop();
  });

  const infer = async (secret: string) => {
    const res = await fetch(`${server.url}/external/api/inference`, {
      method: 'POST',
      headers: authHeaders(secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 8 }),
    });
    return { status: res.status, body: (await res.json()) as { detail?: unknown }, requestId: res.headers.get('x-request-id')! };
  };

  test('503 with a detail while the database is gone, no unmetered reply, and it heals when it is back', async () => {
    const key = await seedFundedKey(server.services, { usd: '10' });
    const before = await infer(key.secret);
    expect(before.status).toBe(200);

    await relay.cut();
    const during = await Promise.all([infer(key.secret), infer(key.secret), infer(key.secret)]);
    for (const r of during) {
      expect(r.status).toBe(503);
      expect(typeof r.body.detail).toBe('string');
    }
    const signup = await fetch(`${server.url}/v1/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        email: 'outage@example.com',
        password: 'correct horse battery',
        name: 'O',
        acceptedPolicyVersion: POLICY_VERSION,
      }),
    });
    expect(signup.status).toBe(503);
    expect(((await signup.json()) as { detail: unknown }).detail).toEqual(expect.any(String));
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);

    await relay.listen(); // the same port again
    let after = await infer(key.secret);
    // A deadline, not 50 tries: under load the pool's reconnects take longer; a service that never
    // heals still fails here.
    for (const deadline = Date.now() + 45_000; Date.now() < deadline && after.status !== 200;) {
      await new Promise((r) => setTimeout(r, 200));
      after = await infer(key.secret);
    }
    expect(after.status).toBe(200);
    // Every 200 was metered; the 503s left no debit behind.
    for (const r of [before, after]) {
      expect((await inferenceEvents(server.services, r.requestId)).filter((e) => e.type === 'TokensDebited')).toHaveLength(1);
    }
    for (const r of during) {
      expect((await inferenceEvents(server.services, r.requestId)).filter((e) => e.type === 'TokensDebited')).toHaveLength(0);
    }
  }, 120_000);
});
