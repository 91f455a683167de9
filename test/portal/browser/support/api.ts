import { POLICY_VERSION } from '../../../support/policy';

/** A small client for setting up a browser test's data through the HTTP API (a bearer session). */
export interface ApiClient {
  token: string;
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
}

export async function signUpAndLogIn(
  baseUrl: string,
  user: { name: string; email: string; password: string },
): Promise<ApiClient & { workspaceId: string; userId: string }> {
  const client: ApiClient = {
    token: '',
    async call(method, path, body, headers = {}) {
      const res = await fetch(baseUrl + path, {
        method,
        headers: { 'content-type': 'application/json', ...(client.token ? { authorization: `Bearer ${client.token}` } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    },
  };
  await client.call('POST', '/v1/signup', { ...user, acceptedPolicyVersion: POLICY_VERSION });
  client.token = (
    await client.call<{ sessionToken: string }>('POST', '/v1/login', { email: user.email, password: user.password })
  ).sessionToken;
  const me = await client.call<{ user: { userId: string }; workspaces: { workspaceId: string; personal: boolean }[] }>('GET', '/v1/me');
  return Object.assign(client, { workspaceId: me.workspaces.find((w) => w.personal)!.workspaceId, userId: me.user.userId });
}

/** Saves the sandbox's always-succeeding card and makes the first deposit, so keys can be created. */
export async function fund(client: ApiClient, workspaceId: string, amount = '100'): Promise<void> {
  await client.call('POST', `/v1/workspaces/${workspaceId}/billing/payment-method`, { paymentMethodId: 'pm_card_visa' });
  await client.call(
    'POST',
    `/v1/workspaces/${workspaceId}/billing/deposits`,
    { amount },
    { 'idempotency-key': `fund-${workspaceId}-${amount}` },
  );
}

/** One non-streaming inference request with a key's secret; answers the HTTP status. */
export async function infer(baseUrl: string, secret: string, text = 'spend a little', maxTokens = 16): Promise<number> {
  const res = await fetch(`${baseUrl}/external/api/inference`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ context: [{ type: 'Human', text }], config: 'service_3_pi', max_tokens: maxTokens }),
  });
  await res.arrayBuffer();
  return res.status;
}
