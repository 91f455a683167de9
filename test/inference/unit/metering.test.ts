import { billedTokens, completed, contextWindowProblem, decideSweep, RequestFacts, requested } from '../../../src/inference/metering';
import { tokenCost } from '../../../src/inference/metering';

const prices = { inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n };
const facts: RequestFacts = {
  requestId: 'r1',
  workspaceId: 'w1',
  keyId: 'k1',
  config: 'service_3_pi',
  endpoint: 'inference',
  promptTokens: 100,
  maxTokens: 50,
  webSearch: false,
};
const reserved = tokenCost(prices, 100, 50);

test('the reservation is the prompt plus max_tokens of output', () => {
  expect(reserved).toBe(100n * 2500n + 50n * 10000n);
});

test('the context window: prompt + max_tokens up to 8192', () => {
  expect(contextWindowProblem(8000, 192)).toBeNull();
  const msg = contextWindowProblem(8000, 193)!;
  expect(msg).toContain('8000');
  expect(msg).toContain('193');
  expect(msg).toContain('8192');
});

describe('what is billed', () => {
  test.each([
    ['stop', 20, { inputTokens: 100, outputTokens: 20 }],
    ['length', 50, { inputTokens: 100, outputTokens: 50 }],
    ['client_disconnected', 7, { inputTokens: 100, outputTokens: 7 }],
    ['client_disconnected', 0, { inputTokens: 100, outputTokens: 0 }],
    ['upstream_error', 5, { inputTokens: 100, outputTokens: 5 }],
    ['upstream_error', 0, { inputTokens: 0, outputTokens: 0 }],
    ['abandoned', 0, { inputTokens: 100, outputTokens: 0 }],
    ['stop', 80, { inputTokens: 100, outputTokens: 50 }], // never above max_tokens
    ['stop', 0, { inputTokens: 0, outputTokens: 0 }], // an empty completion costs nothing (USAGE-POLICY.md)
  ] as const)('%s with %i output tokens', (finishReason, outputTokens, expected) => {
    expect(billedTokens(prices, facts, { finishReason, outputTokens }, reserved)).toEqual(expected);
  });

  test('never more than the reservation, even if prices rose in between', () => {
    const dearer = { inputNanoUsdPerToken: 5000n, outputNanoUsdPerToken: 20000n };
    const b = billedTokens(dearer, facts, { finishReason: 'length', outputTokens: 50 }, reserved);
    expect(BigInt(b.inputTokens) * 5000n + BigInt(b.outputTokens) * 20000n).toBeLessThanOrEqual(reserved);
  });

  test('completed: the two events agree, with the prices written into the debit', () => {
    const [done, debit] = completed(facts, prices, { finishReason: 'stop', outputTokens: 20, durationMs: 12.4 }, reserved);
    expect(done.data).toEqual({
      requestId: 'r1',
      workspaceId: 'w1',
      keyId: 'k1',
      config: 'service_3_pi',
      inputTokens: 100,
      outputTokens: 20,
      finishReason: 'stop',
      durationMs: 12,
    });
    expect(debit.data.amountNanoUsd).toBe((100n * 2500n + 20n * 10000n).toString());
    expect(debit.data.inputPriceNanoUsd).toBe('2500');
    expect(debit.data.outputPriceNanoUsd).toBe('10000');
  });
});

describe('the sweeper decision', () => {
  const now = new Date('2025-01-01T01:00:00Z');
  const req = { ...requested(facts, reserved), position: 5n, created: '2025-01-01T00:00:00Z' };

  test('no InferenceRequested: release', () => {
    expect(decideSweep([], prices, now)).toEqual({ kind: 'release' });
  });

  test('requested, never completed: close as abandoned, billing the prompt', () => {
    const d = decideSweep([req], prices, now);
    expect(d.kind).toBe('close');
    if (d.kind !== 'close') return;
    expect(d.events[0].data.finishReason).toBe('abandoned');
    expect(d.events[0].data.durationMs).toBe(3600_000);
    expect(d.events[1].data).toMatchObject({ inputTokens: 100, outputTokens: 0, amountNanoUsd: '250000' });
  });

  test('already debited: wait for the projector', () => {
    const [done, debit] = completed(facts, prices, { finishReason: 'stop', outputTokens: 1, durationMs: 1 }, reserved);
    const d = decideSweep([req, { ...done, position: 6n, created: '' }, { ...debit, position: 7n, created: '' }], prices, now);
    expect(d).toEqual({ kind: 'debited', position: 7n });
  });
});
