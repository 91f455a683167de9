import { randomUUID } from 'node:crypto';
import type { TestServer } from '../../support/harness';
import { api, newUser, TestUser } from '../../accounts/e2e/helpers';

export { api, newUser };
export type { TestUser };

/** Attaches a card (a Stripe test id) as the user; returns the response. */
export function attach(server: TestServer, user: TestUser, ws: string, paymentMethodId = 'pm_card_visa') {
  return api(server).post(`/v1/workspaces/${ws}/billing/payment-method`).set(user.auth).send({ paymentMethodId });
}

export function deposit(server: TestServer, user: TestUser, ws: string, amount: string, key: string = randomUUID()) {
  return api(server).post(`/v1/workspaces/${ws}/billing/deposits`).set(user.auth).set('Idempotency-Key', key).send({ amount });
}

export function billing(server: TestServer, user: TestUser, ws: string) {
  return api(server).get(`/v1/workspaces/${ws}/billing`).set(user.auth);
}

/** A user with a card and the initial deposit in their personal workspace. */
export async function fundedUser(server: TestServer, label = 'payer', amount = '100'): Promise<TestUser> {
  const u = await newUser(server, label);
  const a = await attach(server, u, u.personalWs);
  if (a.status !== 200) throw new Error(`attach failed: ${a.status} ${JSON.stringify(a.body)}`);
  const d = await deposit(server, u, u.personalWs, amount);
  if (d.status !== 201) throw new Error(`deposit failed: ${d.status} ${JSON.stringify(d.body)}`);
  return u;
}
