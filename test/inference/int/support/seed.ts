import { randomBytes, randomUUID } from 'node:crypto';
import type { ApiKeyCreated, ApiKeyDeleted, RateLimitChanged } from '../../../../src/accounts/events';
import type { DepositSucceeded, PaymentMethodAttached } from '../../../../src/billing/events';
import { parseUsd } from '../../../../src/platform/money';
import { streams } from '../../../../src/platform/streams';
import type { RecordedEvent } from '../../../../src/platform/eventstore/port';
import { getBalance } from '../../../../src/billing/projections/balances/queries';
import { hashKey } from '../../../../src/accounts/projections/key-index/queries';
import type { Services } from '../../../../src/services';

/** Seeds keys and balances by appending events directly, then waits for the projections. */

export interface SeededKey {
  workspaceId: string;
  keyId: string;
  secret: string;
  keyHash: string;
}

export async function seedKey(
  s: Services,
  opts: { workspaceId?: string; scopes?: string[]; expiresAt?: string | null; rateLimit?: number | null } = {},
): Promise<SeededKey> {
  const workspaceId = opts.workspaceId ?? randomUUID();
  const keyId = randomUUID();
  const secret = `tg_${randomBytes(24).toString('hex')}`;
  const keyHash = hashKey(secret);
  const created: ApiKeyCreated = {
    type: 'ApiKeyCreated',
    data: {
      workspaceId,
      keyId,
      name: 'test key',
      keyHash,
      prefix: secret.slice(0, 7),
      last4: secret.slice(-4),
      scopes: opts.scopes ?? ['inference'],
      expiresAt: opts.expiresAt ?? null,
      createdBy: 'test',
    },
  };
  const events: Array<{ type: string; data: unknown }> = [created];
  if (opts.rateLimit !== undefined) {
    const changed: RateLimitChanged = {
      type: 'RateLimitChanged',
      data: { workspaceId, keyId, keyHash, requestsPerMinute: opts.rateLimit, by: 'operator' },
    };
    events.push(changed);
  }
  const r = await s.store.append(
    streams.workspace(workspaceId),
    events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data })),
    { expectedRevision: 'any' },
  );
  if (!(await s.progress.waitFor(r.position, 5000))) throw new Error('projections did not catch up');
  return { workspaceId, keyId, secret, keyHash };
}

export async function deleteKey(s: Services, key: SeededKey): Promise<void> {
  const e: ApiKeyDeleted = {
    type: 'ApiKeyDeleted',
    data: { workspaceId: key.workspaceId, keyId: key.keyId, keyHash: key.keyHash, by: 'test' },
  };
  const r = await s.store.append(streams.workspace(key.workspaceId), [{ id: randomUUID(), ...e }], { expectedRevision: 'any' });
  await s.progress.waitFor(r.position, 5000);
}

/** A payment method and a deposit of `amountUsd` (a decimal string) or `amountNano`. */
export async function fund(s: Services, workspaceId: string, amount: { usd?: string; nano?: bigint }): Promise<void> {
  const nano = amount.nano ?? parseUsd(amount.usd ?? '100');
  const attached: PaymentMethodAttached = {
    type: 'PaymentMethodAttached',
    data: { workspaceId, paymentMethodId: 'pm_card_visa', brand: 'visa', last4: '4242', customerId: null, gateway: 'sandbox' },
  };
  const deposit: DepositSucceeded = {
    type: 'DepositSucceeded',
    data: { workspaceId, depositId: randomUUID(), amountNanoUsd: nano.toString(), paymentIntentId: `pi_${randomUUID()}`, by: 'test' },
  };
  const r = await s.store.append(
    streams.billing(workspaceId),
    [attached, deposit].map((e) => ({ id: randomUUID(), type: e.type, data: e.data })),
    { expectedRevision: 'any' },
  );
  if (!(await s.progress.waitFor(r.position, 5000))) throw new Error('projections did not catch up');
}

export async function seedFundedKey(
  s: Services,
  opts: { workspaceId?: string; usd?: string; nano?: bigint; rateLimit?: number | null; scopes?: string[] } = {},
): Promise<SeededKey> {
  const key = await seedKey(s, opts);
  await fund(s, key.workspaceId, opts);
  return key;
}

export async function inferenceEvents(s: Services, requestId: string): Promise<RecordedEvent[]> {
  return s.store.readStream(streams.inference(requestId));
}

/** Waits until the projections applied everything in the store. */
export async function settle(s: Services): Promise<void> {
  const head = await s.store.headPosition();
  if (!(await s.progress.waitFor(head, 10000))) throw new Error('projections did not catch up');
}

export async function balanceOf(s: Services, workspaceId: string): Promise<bigint> {
  return (await getBalance(s.readModels, workspaceId)).balance;
}

export function authHeaders(secret: string): Record<string, string> {
  return { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
}
