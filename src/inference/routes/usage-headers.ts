import type { Response } from 'express';
import { z } from 'zod';
import { formatUsd } from '../../platform/money';
import type { Executed } from '../usecases/engine';
import type { TightestLeft } from '../../billing';

/**
 * What one call cost, told to the caller in the answer itself. The figures are those of the
 * request's TokensDebited (the engine returns the debit it recorded), so summing them over calls
 * gives exactly what the ledger debited. The spec's JSON body stays `{created, text}`: the figures
 * travel as headers, and on the spec stream as an opt-in last `event: usage` frame.
 */

export const USAGE_HEADERS = {
  'x-usage-input-tokens': 'Prompt tokens billed (the TokensDebited inputTokens)',
  'x-usage-output-tokens': 'Output tokens billed (the TokensDebited outputTokens)',
  'x-usage-cost-usd': 'What this call cost, USD as an exact decimal string (the TokensDebited amount)',
} as const;

/**
 * The tightest of the layers a request counts against (the balance, the key's budget, its creator's
 * member budget), once this request was held: what the next request may hold at most. On every
 * generation answer the admission held money for (GET …/keys/{id}/budgets lists every layer).
 */
export const BUDGET_HEADERS = {
  'x-budget-remaining-usd':
    'What is left of the tightest layer this request counts against (balance, key budget, member budget) once this request was held, USD as an exact decimal string',
  'x-budget-remaining-scope': '`balance`, `key` or `member`: which layer that is',
} as const;

export function setBudgetRemaining(res: Response, tightest: TightestLeft | undefined): void {
  if (!tightest) return;
  res.setHeader('x-budget-remaining-usd', formatUsd(tightest.remaining));
  res.setHeader('x-budget-remaining-scope', tightest.scope);
}

export function setUsageHeaders(res: Response, out: Executed): void {
  res.setHeader('x-usage-input-tokens', String(out.inputTokens));
  res.setHeader('x-usage-output-tokens', String(out.outputTokens));
  res.setHeader('x-usage-cost-usd', formatUsd(out.costNanoUsd));
}

const usd = z
  .string()
  .regex(/^\d+(\.\d{1,9})?$/)
  .describe('USD as an exact decimal string');

/** The last frame of a spec stream asked for with `?include_usage=true`, sent as `event: usage`. */
export const inferenceUsage = z
  .object({
    request_id: z.string().describe('The x-request-id of this answer'),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    cost: usd,
  })
  .meta({ id: 'InferenceUsage', description: 'Sent as `event: usage`, last, when the stream was asked with include_usage=true' });

export function usageFrame(requestId: string, out: Executed): z.output<typeof inferenceUsage> {
  return { request_id: requestId, input_tokens: out.inputTokens, output_tokens: out.outputTokens, cost: formatUsd(out.costNanoUsd) };
}
