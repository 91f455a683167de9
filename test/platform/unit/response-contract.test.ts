import { contractProblems, RecordedAnswer } from '../../support/response-contract';

/**
 * The check every end-to-end server's answers go through when the harness closes it
 * (test/support/response-contract.ts): it passes answers the document declares and names each
 * kind of drift, so a route that changes without its contract fails the suite that called it.
 */

const CHAT = '/external/api/inference/openai/v1/chat/completions';
const json = (status: number, body: unknown, headers: Record<string, string> = {}): RecordedAnswer => ({
  method: 'post',
  path: CHAT,
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1', ...headers },
  body: JSON.stringify(body),
});
const budget = {
  scope: 'key',
  keyId: 'k1',
  userId: null,
  period: 'monthly',
  limit: '1',
  spent: '0.99',
  held: '0',
  remaining: '0.01',
  required: '0.02',
  resetsAt: '2026-12-01T00:00:00.000Z',
};

test("a budget's 402 under the OpenAI paths (detail, budget, and error with the budget) matches OpenAiError", () => {
  const body = {
    detail: 'The key budget is spent',
    budget,
    error: { message: 'The key budget is spent', type: 'insufficient_quota', code: 'budget_exceeded', budget },
  };
  expect(contractProblems(json(402, body, { 'x-ratelimit-limit-requests': '100' }))).toEqual([]);
});

test('a field the schema does not have, a status not declared and a header not declared are each named', () => {
  expect(contractProblems(json(402, { detail: 'x', surprise: 1 })).join()).toMatch(
    /POST \/external\/api\/inference\/openai\/v1\/chat\/completions → 402: body does not match/,
  );
  expect(contractProblems(json(418, { detail: 'x' }))).toEqual([expect.stringMatching(/→ 418: status not declared/)]);
  expect(contractProblems(json(402, { detail: 'x' }, { 'x-ratelimit-limit-tokens': '1' }))).toEqual([
    expect.stringMatching(/header x-ratelimit-limit-tokens not declared/),
  ]);
});

test('paths no contract serves, and the last-resort 500, are not checked', () => {
  expect(contractProblems({ ...json(404, { detail: 'Not Found' }), path: '/no/such/route' })).toEqual([]);
  expect(contractProblems(json(500, { detail: 'Internal Server Error' }))).toEqual([]);
});

test('a stream: each data frame is checked against the item schema ([DONE] aside); a media type with parameters matches its type', () => {
  const stream = (frames: string[]): RecordedAnswer => ({
    method: 'post',
    path: '/external/api/inference/openai/v1/responses',
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'r1' },
    body: frames.join(''),
  });
  const delta = { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi', logprobs: [] };
  const frame = (v: unknown) => `event: x\ndata: ${JSON.stringify(v)}\n\n`;
  expect(contractProblems(stream([frame({ ...delta, sequence_number: 0 }), 'data: [DONE]\n\n']))).toEqual([]);
  expect(contractProblems(stream([frame({ ...delta, sequence_number: 0 }), frame({ ...delta, delta: 1, sequence_number: 1 })]))).toEqual([
    expect.stringMatching(/→ 200: a stream frame does not match/),
  ]);
  const metrics: RecordedAnswer = {
    method: 'get',
    path: '/admin/metrics',
    status: 200,
    headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'x-request-id': 'r1' },
    body: '# HELP x\n',
  };
  expect(contractProblems(metrics)).toEqual([]);
});
