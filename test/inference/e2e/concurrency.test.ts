import { reservationKeys } from '../../../src/billing';
import { tokenCost } from '../../../src/inference/metering';
import { renderPrompt } from '../../../src/inference/prompt';
import { countTokens } from '../../../src/inference/tokenizer';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import type { TestServer } from '../../support/harness';
import { authHeaders, balanceOf, inferenceEvents, seedFundedKey, settle } from '../int/support/seed';
import { startInferenceServer } from '../int/support/server';

let server: TestServer;
beforeAll(async () => {
  server = await startInferenceServer();
});
afterAll(() => server.close());

test('500 parallel requests on a balance that covers about half: never below zero, one debit per 200, debits = balance drop', async () => {
  const s = server.services;
  const context = [{ type: 'Human' as const, text: 'Write me a short, friendly greeting.' }];
  const maxTokens = 50;
  const promptTokens = countTokens(renderPrompt({ config: 'service_3_pi', context, metadata: {}, now: new Date() }).text);
  const perRequest = tokenCost({ inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n }, promptTokens, maxTokens);
  const initial = perRequest * 250n;
  const key = await seedFundedKey(s, { nano: initial, rateLimit: 100_000 });

  // Watch the balance and the holds while the requests run.
  let lowest = initial;
  let watching = true;
  const reservations = new Reservations(s.redis, s.ks);
  const balanceKey = (await s.readModels.keys('balances')).ws(key.workspaceId);
  const heldKey = reservationKeys((...p) => s.ks.shared(...p), key.workspaceId).held;
  const watcher = (async () => {
    while (watching) {
      // One MULTI: the balance and the holds at the same instant.
      const [[, b], [, h]] = (await s.redis.multi().hget(balanceKey, 'balance').hget(heldKey, '=total').exec()) as [
        [null, string],
        [null, string | null],
      ];
      const balance = BigInt(b);
      if (balance < lowest) lowest = balance;
      expect(BigInt(h ?? '0')).toBeLessThanOrEqual(balance);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();

  const body = JSON.stringify({ context, config: 'service_3_pi', max_tokens: maxTokens });
  const paths = ['/external/api/inference', '/external/api/inference/streaming'];
  const results = await Promise.all(
    Array.from({ length: 500 }, async (_, i) => {
      const res = await fetch(server.url + paths[i % 2], { method: 'POST', headers: authHeaders(key.secret), body });
      await res.arrayBuffer();
      return { status: res.status, requestId: res.headers.get('x-request-id')! };
    }),
  );
  watching = false;
  await watcher;

  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 402);
  expect(ok.length + refused.length).toBe(500);
  expect(ok.length).toBeGreaterThanOrEqual(250);
  expect(refused.length).toBeGreaterThan(0);

  await settle(s);
  let debited = 0n;
  for (const r of ok) {
    const debits = (await inferenceEvents(s, r.requestId)).filter((e) => e.type === 'TokensDebited');
    expect(debits).toHaveLength(1);
    debited += BigInt((debits[0].data as { amountNanoUsd: string }).amountNanoUsd);
  }
  for (const r of refused) expect(await inferenceEvents(s, r.requestId)).toHaveLength(0);
  const all = await s.store.readAll();
  const debitsInStore = all.filter(
    (e) => e.type === 'TokensDebited' && (e.data as { workspaceId: string }).workspaceId === key.workspaceId,
  );
  expect(debitsInStore).toHaveLength(ok.length);

  const final = await balanceOf(s, key.workspaceId);
  expect(final).toBeGreaterThanOrEqual(0n);
  expect(lowest).toBeGreaterThanOrEqual(0n);
  expect(initial - final).toBe(debited);
  expect(await reservations.held(key.workspaceId)).toBe(0n);
}, 120_000);
