import { createParser } from 'eventsource-parser';
import { parseUsd } from '../../../src/platform/money';
import type { TokensDebited } from '../../../src/inference/events';
import { balanceOf, settle } from '../int/support/seed';
import { fundedServerFixture } from '../int/support/server';

/**
 * Every call tells its caller what it cost, and those figures are the ledger's: summed over many
 * calls on every route they equal the TokensDebited of the workspace and the balance it lost.
 */

const INFER = '/external/api/inference';
const STREAM = '/external/api/inference/streaming';
const CHAT = '/external/api/inference/openai/v1/chat/completions';
const USD = /^\d+(\.\d{1,9})?$/;

async function frames(res: Response): Promise<Array<{ event?: string; data: string }>> {
  const out: Array<{ event?: string; data: string }> = [];
  const parser = createParser({ onEvent: (e) => out.push({ ...(e.event ? { event: e.event } : {}), data: e.data }) });
  const decoder = new TextDecoder();
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(part, { stream: true }));
  return out;
}

const t = fundedServerFixture();

const body = (seed: number) => ({
  context: [{ type: 'Human', text: `Tell me about the number ${seed}` }],
  config: 'service_3_pi',
  seed,
  max_tokens: 20 + seed,
});

test('the figures each answer carries sum to exactly what the ledger debited', async () => {
  await settle(t.server.services);
  const before = await balanceOf(t.server.services, t.key.workspaceId);
  const told = new Map<string, { input: number; output: number; cost: bigint }>();

  for (let i = 0; i < 6; i++) {
    // The spec JSON route: headers, and a body that stays exactly {created, text}.
    const plain = await t.post(INFER, body(i));
    expect(plain.status).toBe(200);
    expect(Object.keys((await plain.json()) as object).sort()).toEqual(['created', 'text']);
    const cost = plain.headers.get('x-usage-cost-usd') ?? '';
    expect(cost).toMatch(USD);
    told.set(plain.headers.get('x-request-id')!, {
      input: Number(plain.headers.get('x-usage-input-tokens')),
      output: Number(plain.headers.get('x-usage-output-tokens')),
      cost: parseUsd(cost),
    });

    // The spec stream, asked for its usage: one last `event: usage` frame.
    const streamed = await t.post(`${STREAM}?include_usage=true`, body(100 + i));
    const got = await frames(streamed);
    const last = got[got.length - 1];
    expect(last.event).toBe('usage');
    expect(got.slice(0, -1).every((f) => f.event === undefined)).toBe(true);
    const u = JSON.parse(last.data) as { request_id: string; input_tokens: number; output_tokens: number; cost: string };
    expect(u.request_id).toBe(streamed.headers.get('x-request-id'));
    expect(u.cost).toMatch(USD);
    told.set(u.request_id, { input: u.input_tokens, output: u.output_tokens, cost: parseUsd(u.cost) });

    // OpenAI, whole and streamed with include_usage.
    const chat = { model: 'service_3_pi', messages: [{ role: 'user', content: `Count to ${i}` }], seed: i, max_tokens: 15 };
    const whole = await t.post(CHAT, chat);
    const w = (await whole.json()) as { id: string; usage: { prompt_tokens: number; completion_tokens: number; cost: string } };
    expect(w.usage.cost).toMatch(USD);
    expect(whole.headers.get('x-usage-cost-usd')).toBe(w.usage.cost);
    told.set(w.id.replace('chatcmpl-', ''), {
      input: w.usage.prompt_tokens,
      output: w.usage.completion_tokens,
      cost: parseUsd(w.usage.cost),
    });

    const chunks = await frames(await t.post(CHAT, { ...chat, stream: true, stream_options: { include_usage: true } }));
    const usage = JSON.parse(chunks[chunks.length - 2].data) as {
      id: string;
      usage: { prompt_tokens: number; completion_tokens: number; cost: string };
    };
    expect(chunks[chunks.length - 1].data).toBe('[DONE]');
    told.set(usage.id.replace('chatcmpl-', ''), {
      input: usage.usage.prompt_tokens,
      output: usage.usage.completion_tokens,
      cost: parseUsd(usage.usage.cost),
    });
  }
  expect(told.size).toBe(24);

  await settle(t.server.services);
  const debits = (await t.server.services.store.readAll())
    .filter((e) => e.type === 'TokensDebited')
    .map((e) => e.data as TokensDebited['data'])
    .filter((d) => d.workspaceId === t.key.workspaceId);
  expect(debits).toHaveLength(24);
  for (const d of debits) {
    expect(told.get(d.requestId)).toEqual({ input: d.inputTokens, output: d.outputTokens, cost: BigInt(d.amountNanoUsd) });
  }
  const sumTold = [...told.values()].reduce((a, t) => a + t.cost, 0n);
  expect(sumTold).toBeGreaterThan(0n);
  expect(sumTold).toBe(debits.reduce((a, d) => a + BigInt(d.amountNanoUsd), 0n));
  expect(before - (await balanceOf(t.server.services, t.key.workspaceId))).toBe(sumTold);
});

test('without include_usage the spec stream is the text frames only', async () => {
  const got = await frames(await t.post(STREAM, body(7)));
  expect(got.length).toBeGreaterThan(0);
  expect(got.every((f) => f.event === undefined && 'text' in (JSON.parse(f.data) as object))).toBe(true);
});
