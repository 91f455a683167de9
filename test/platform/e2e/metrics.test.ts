/**
 * /metrics on its own listener (METRICS_PORT): after real traffic every family the operators'
 * dashboard uses is there and the counts moved; labels carry no key, workspace or request id;
 * the public port serves metrics only behind the operator token.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { api, newUser } from '../../accounts/e2e/helpers';
import { startTestServer, TestServer } from '../../support/harness';
import { authHeaders, seedKey } from '../../inference/int/support/seed';

const TOKEN = 'operator-token-0123456789';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ METRICS_PORT: '0', ADMIN_TOKEN: TOKEN, SWEEPER_ENABLED: 'false' });
});
afterAll(() => server?.close());

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${server.running.metricsPort}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** Sum of the samples of `name` whose labels include every `labels` pair. */
function sum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const l = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))) total += Number(m[3]);
  }
  return total;
}

test('after traffic, every family is there and the counts moved', async () => {
  const before = await scrape();
  const user = await newUser(server, 'metrics');
  const ws = user.personalWs;
  expect(
    (await api(server).post(`/v1/workspaces/${ws}/billing/payment-method`).set(user.auth).send({ paymentMethodId: 'pm_card_visa' })).status,
  ).toBe(200);
  const deposit = await api(server)
    .post(`/v1/workspaces/${ws}/billing/deposits`)
    .set(user.auth)
    .set('Idempotency-Key', `dep-${ws}`)
    .send({ amount: '100' });
  expect([200, 201]).toContain(deposit.status);
  const key = await seedKey(server.services, { workspaceId: ws, rateLimit: 3 });
  const body = JSON.stringify({ context: [{ type: 'Human', text: 'Hello there' }], config: 'service_3_pi', max_tokens: 5 });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await fetch(`${server.url}/external/api/inference`, { method: 'POST', headers: authHeaders(key.secret), body });
    statuses.push(res.status);
    await res.arrayBuffer();
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
  await server.services.progress.waitFor(await server.services.store.headPosition(), 5000);

  const after = await scrape();
  const moved = (name: string, labels: Record<string, string> = {}) => sum(after, name, labels) - sum(before, name, labels);
  // HTTP, by route template and status
  expect(moved('tollgate_http_request_duration_seconds_count', { route: '/external/api/inference', status: '200' })).toBe(3);
  expect(moved('tollgate_http_request_duration_seconds_count', { route: '/external/api/inference', status: '429' })).toBe(1);
  expect(moved('tollgate_http_request_duration_seconds_count', { route: '/v1/workspaces/:ws/billing/deposits' })).toBe(1);
  // inference
  expect(moved('tollgate_inference_requests_total', { config: 'service_3_pi', endpoint: 'inference', recorded: 'true' })).toBe(3);
  expect(moved('tollgate_inference_tokens_total', { direction: 'input' })).toBeGreaterThan(0);
  expect(moved('tollgate_inference_tokens_total', { direction: 'output' })).toBeGreaterThan(0);
  expect(moved('tollgate_debited_nano_usd_total', { config: 'service_3_pi' })).toBeGreaterThan(0);
  expect(moved('tollgate_rate_limit_refusals_total')).toBe(1);
  expect(after).toMatch(/^tollgate_reservations_open \d+$/m);
  // projections
  for (const p of ['keys', 'balances', 'memberships']) {
    expect(sum(after, 'tollgate_projection_checkpoint', { projection: p })).toBeGreaterThan(0);
    expect(after).toMatch(new RegExp(`^tollgate_projection_lag_events\\{projection="${p}"\\} \\d+$`, 'm'));
    expect(after).toMatch(new RegExp(`^tollgate_projection_lag_seconds\\{projection="${p}"\\} [\\d.e-]+$`, 'm'));
    expect(sum(after, 'tollgate_projection_ready', { projection: p })).toBe(1);
  }
  // event store
  expect(moved('tollgate_eventstore_append_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(6);
  expect(moved('tollgate_eventstore_group_commit_size_count')).toBeGreaterThan(0);
  // queues and payments
  expect(after).toMatch(/^tollgate_queue_jobs\{queue="auto-reload",state="waiting"\} \d+$/m);
  expect(after).toMatch(/^tollgate_queue_jobs\{queue="auto-reload",state="failed"\} \d+$/m);
  expect(moved('tollgate_payments_total', { gateway: 'sandbox', kind: 'deposit', outcome: 'succeeded' })).toBe(1);
  // Node's own
  expect(after).toMatch(/^process_cpu_user_seconds_total /m);
  expect(after).toMatch(/^nodejs_eventloop_lag_seconds /m);

  // every series the Grafana dashboard queries exists
  const dashboard = readFileSync(resolve(__dirname, '../../../ops/grafana/tollgate-dashboard.json'), 'utf8');
  const queried = new Set(
    [...dashboard.matchAll(/\b((?:tollgate|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1].replace(/_(bucket|count|sum)$/, '')),
  );
  const exported = new Set([...after.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
  expect([...queried].filter((n) => !exported.has(n))).toEqual([]);
  expect(queried.size).toBeGreaterThan(15);

  // bounded labels: no id of a key, workspace, user or request anywhere
  for (const id of [key.keyId, ws, user.userId]) expect(after).not.toContain(id);
  expect(after).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
});

test('the public port serves metrics only behind the operator token; the metrics port serves nothing else', async () => {
  const open = await fetch(`${server.url}/metrics`);
  expect(await open.text()).not.toContain('tollgate_http_request_duration_seconds');
  expect((await fetch(`${server.url}/admin/metrics`)).status).toBe(401);
  const admin = await fetch(`${server.url}/admin/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(admin.status).toBe(200);
  expect(await admin.text()).toContain('tollgate_http_request_duration_seconds');
  const other = await fetch(`http://127.0.0.1:${server.running.metricsPort}/readyz`);
  expect(other.status).toBe(404);
});

test('without METRICS_PORT there is no metrics listener', async () => {
  const plain = await startTestServer({ SWEEPER_ENABLED: 'false' });
  try {
    expect(plain.running.metricsPort).toBeUndefined();
  } finally {
    await plain.close();
  }
});
