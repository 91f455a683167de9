import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import createClient from 'openapi-fetch';
import type { paths } from '../../support/generated/openapi';
import { startTestServer, TestServer } from '../../support/harness';

/**
 * A client generated from /openapi.json with openapi-typescript, unmodified, drives the whole
 * account and inference flow through openapi-fetch: every path, parameter, header and body below is
 * typed by the generated `paths` (tsc checks this file), none written by hand. Only the credentials
 * are the caller's own: the session token and the API key, as bearer tokens.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

test('the committed generated types are what openapi-typescript makes of the document today (else: npm run openapi:types)', () => {
  // The document the script reads is the one served (test/platform/e2e/openapi.test.ts checks they are equal).
  const root = join(__dirname, '..', '..', '..');
  const fresh = execFileSync(process.execPath, ['--import', 'tsx', 'test/support/openapi-types.ts', '--print'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 32 << 20,
  });
  expect(readFileSync(join(root, 'test/support/generated/openapi.ts'), 'utf8')).toBe(fresh);
});

test('signup to a receipt, with the generated client only', async () => {
  const anonymous = createClient<paths>({ baseUrl: server.url });
  const policy = await anonymous.GET('/v1/policies/usage');
  expect(policy.response.status).toBe(200);
  const email = `gen-${randomUUID().slice(0, 8)}@example.com`;
  const password = 'correct horse battery';
  const signedUp = await anonymous.POST('/v1/signup', {
    body: { email, password, name: 'Gen', acceptedPolicyVersion: policy.data!.version },
  });
  expect(signedUp.response.status).toBe(201);
  const login = await anonymous.POST('/v1/login', { body: { email, password } });
  const session = createClient<paths>({ baseUrl: server.url, headers: { Authorization: `Bearer ${login.data!.sessionToken}` } });

  const me = await session.GET('/v1/me');
  const ws = me.data!.workspaces.find((w) => w.personal)!.workspaceId;
  const card = await session.POST('/v1/workspaces/{ws}/billing/payment-method', {
    params: { path: { ws } },
    body: { paymentMethodId: 'pm_card_visa' },
  });
  expect(card.response.status).toBe(200);
  const depositKey = randomUUID();
  const deposit = await session.POST('/v1/workspaces/{ws}/billing/deposits', {
    params: { path: { ws }, header: { 'Idempotency-Key': depositKey } },
    body: { amount: '100' },
  });
  expect(deposit.response.status).toBe(201);
  const again = await session.POST('/v1/workspaces/{ws}/billing/deposits', {
    params: { path: { ws }, header: { 'Idempotency-Key': depositKey } },
    body: { amount: '100' },
  });
  expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');

  const created = await session.POST('/v1/workspaces/{ws}/keys', { params: { path: { ws } }, body: { name: 'generated' } });
  expect(created.response.status).toBe(201);
  const key = createClient<paths>({ baseUrl: server.url, headers: { Authorization: `Bearer ${created.data!.secret}` } });

  const body = {
    context: [{ type: 'Human' as const, text: 'Hello from a generated client' }],
    config: 'service_3_pi' as const,
    max_tokens: 30,
  };
  const count = await key.POST('/external/api/inference/tokens', { body });
  expect(count.data!.fits).toBe(true);

  const idem = randomUUID();
  const reply = await key.POST('/external/api/inference', { params: { header: { 'Idempotency-Key': idem } }, body });
  expect(typeof reply.data!.text).toBe('string');
  const requestId = reply.response.headers.get('x-request-id')!;
  const cost = reply.response.headers.get('x-usage-cost-usd');
  const replay = await key.POST('/external/api/inference', { params: { header: { 'Idempotency-Key': idem } }, body });
  expect(replay.response.headers.get('Idempotent-Replayed')).toBe('true');
  expect(replay.data).toEqual(reply.data);

  // The stream: the generated type of one `data:` frame is the chunk (or the usage frame).
  const streamed = await key.POST('/external/api/inference/streaming', {
    params: { query: { include_usage: 'true' } },
    body,
    parseAs: 'stream',
  });
  type Frame = paths['/external/api/inference/streaming']['post']['responses'][200]['content']['text/event-stream'];
  const frames: Frame[] = [];
  const parser = createParser({ onEvent: (e) => frames.push(JSON.parse(e.data) as Frame) });
  const decoder = new TextDecoder();
  for await (const part of streamed.data as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(part, { stream: true }));
  const texts = frames.flatMap((f) => ('text' in f ? [f.text] : []));
  const usage = frames.find((f) => 'cost' in f);
  expect(texts.join('').length).toBeGreaterThan(0);
  expect(usage && 'cost' in usage ? usage.cost : null).toMatch(/^\d/);

  const chat = await key.POST('/external/api/inference/openai/v1/chat/completions', {
    body: { model: 'service_3_pi', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 },
  });
  // The 200 is JSON or a stream (by `stream`): the generated type is their union, narrowed here.
  const chatUsage = chat.data && 'usage' in chat.data ? chat.data.usage : undefined;
  expect(chatUsage?.cost).toMatch(/^\d/);

  const byKey = await key.GET('/external/api/inference/requests/{requestId}', { params: { path: { requestId } } });
  expect(byKey.data!.cost).toBe(cost);
  const byMember = await session.GET('/v1/workspaces/{ws}/requests/{requestId}', { params: { path: { ws, requestId } } });
  expect(byMember.data!.debit?.position).toBe(byKey.data!.debit?.position);

  // The Responses API, its budget header, the key's budget stack and the signed receipt's key set.
  const response = await key.POST('/external/api/inference/openai/v1/responses', {
    params: { header: { 'Idempotency-Key': randomUUID() } },
    body: { model: 'service_3_pi', input: 'Hi', max_output_tokens: 10 },
  });
  const responseUsage = response.data && 'usage' in response.data ? response.data.usage : undefined;
  expect(responseUsage?.cost).toMatch(/^\d/);
  expect(response.response.headers.get('x-budget-remaining-scope')).toBe('balance');
  const budgets = await session.GET('/v1/workspaces/{ws}/keys/{keyId}/budgets', { params: { path: { ws, keyId: created.data!.keyId } } });
  expect(budgets.data!.layers.map((l) => l.scope)).toEqual(['balance']);
  const jwks = await anonymous.GET('/.well-known/jwks.json');
  expect(jwks.data!.keys.map((k) => k.kid)).toContain(byKey.data!.signature?.kid);

  const notAnId = await key.GET('/external/api/inference/requests/{requestId}', { params: { path: { requestId: 'nope' } } });
  expect(notAnId.response.status).toBe(422);
  expect(notAnId.error).toBeDefined();
});
