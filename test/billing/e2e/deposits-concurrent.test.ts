import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, TestServer } from '../../support/harness';
import { attach, billing, deposit, newUser } from './helpers';
import { streams } from '../../../src/platform/streams';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

describe('deposits with different Idempotency-Keys sent at the same moment', () => {
  test('all 20 succeed once each: 201, one DepositSucceeded and one charge per key, the balance is their sum', async () => {
    const u = await newUser(server);
    expect((await attach(server, u, u.personalWs)).status).toBe(200);
    const keys = Array.from({ length: 20 }, () => randomUUID());
    const answers = await Promise.all(keys.map((k) => deposit(server, u, u.personalWs, '100', k)));
    expect(answers.map((a) => a.status)).toEqual(keys.map(() => 201));
    const ids = new Set(answers.map((a) => a.body.deposit.depositId));
    expect(ids.size).toBe(20);

    const events = await server.services.store.readStream(streams.billing(u.personalWs));
    const succeeded = events.filter((e) => e.type === 'DepositSucceeded');
    expect(succeeded).toHaveLength(20);
    expect(new Set(succeeded.map((e) => (e.data as { depositId: string }).depositId))).toEqual(ids);
    // One charge per deposit: every succeeded deposit names a distinct PaymentIntent.
    expect(new Set(succeeded.map((e) => (e.data as { paymentIntentId: string }).paymentIntentId)).size).toBe(20);
    expect((await billing(server, u, u.personalWs)).body.balance).toBe('2000');
    // The gateway's own record (the sandbox's payments file): exactly one payment per deposit.
    const payments = readFileSync(join(server.dataDir, 'sandbox-payments.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).record as { paymentIntentId: string; metadata?: Record<string, string> })
      .filter((r) => ids.has(r.metadata?.ledger_id ?? ''));
    expect(new Set(payments.map((p) => p.paymentIntentId)).size).toBe(20);

    // Retrying each key afterwards replays, charging nothing more.
    const again = await Promise.all(keys.slice(0, 5).map((k) => deposit(server, u, u.personalWs, '100', k)));
    expect(again.map((a) => [a.status, a.headers['idempotent-replayed']])).toEqual(again.map(() => [201, 'true']));
    expect((await billing(server, u, u.personalWs)).body.balance).toBe('2000');
  });
});
