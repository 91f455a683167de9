import { ResponseContract } from '../../platform/http/contract';
import { z } from 'zod';
import { openAiErrorBody } from './response-schemas';
import { BUDGET_HEADERS } from './usage-headers';

/** The answers the inference area's contracts share: headers, and failures by status. */

export const REQUEST_ID = { 'x-request-id': "This request's id: the requestId of its events and of the playground's cost lookup" };
export const RETRY = { 'Retry-After': 'Seconds to wait before retrying' };
export const RATE_LIMIT = {
  'x-ratelimit-limit-requests': "Requests per minute the key may send (its window's limit)",
  'x-ratelimit-remaining-requests': "Requests left in the key's current window",
  'x-ratelimit-reset-requests': 'When the window resets, e.g. `12s`',
};
export const CHALLENGE = { 'WWW-Authenticate': '`Bearer`: the scheme the route expects' };
export const REPLAYED = {
  'Idempotent-Replayed': '`true` when this is the recorded answer of an earlier request with the same Idempotency-Key',
};

/**
 * The headers each failure carries, by status. A metered route's answers after the key was read
 * carry x-ratelimit-* (failures of the generation itself, 502 and 503, too); 401, 403 and 413 come
 * before it.
 */
function failureHeaders(status: number, metered: boolean): Record<string, string> {
  const rate = metered ? RATE_LIMIT : {};
  // A generation that fails after its hold (502, 503) keeps the remaining-budget headers admission set.
  const budget = metered ? BUDGET_HEADERS : {};
  if (status === 401) return { ...REQUEST_ID, ...CHALLENGE };
  if (status === 429) return { ...REQUEST_ID, ...rate, ...RETRY };
  if (status === 503) return { ...REQUEST_ID, ...rate, ...budget, ...RETRY };
  if (status === 502) return { ...REQUEST_ID, ...rate, ...budget };
  if (status === 409) return { ...REQUEST_ID, ...rate, ...RETRY };
  if (status !== 403 && status !== 413) return { ...REQUEST_ID, ...rate };
  return REQUEST_ID;
}

/** `metered`: the route counts in the key's rate limit, so answers after the count carry x-ratelimit-*. */
export const failures = (openAi: boolean, statuses: Record<number, string>, metered = false): Record<number, ResponseContract> =>
  Object.fromEntries(
    Object.entries(statuses).map(([status, description]) => [
      Number(status),
      { description, ...(openAi ? { schema: openAiErrorBody } : {}), headers: failureHeaders(Number(status), metered) },
    ]),
  );

export const AUTH_FAILURES = {
  401: 'The API key is missing, malformed, unknown, deleted, rolled away or expired (WWW-Authenticate: Bearer)',
  403: 'The key lacks the inference scope',
  503: 'Keys cannot be checked (Redis down) or the read models are being rebuilt',
};

export const GENERATION_FAILURES = {
  400: 'The prompt does not fit in the context window with max_tokens for the completion',
  ...AUTH_FAILURES,
  402: "Insufficient balance, or the key's monthly budget is spent",
  413: 'Request body too large (over 2 MB)',
  409: 'A request with the same Idempotency-Key is still running (Retry-After)',
  422: 'A field breaks the contract, a bad Idempotency-Key, or an Idempotency-Key used before with a different request',
  429: "The key's rate limit (requests per minute) is reached",
  502: 'The model upstream failed before any text was sent',
  503: 'The event store, Redis or the read models are unavailable; nothing is billed',
};

export const ok = (description: string, r: Omit<ResponseContract, 'description'>): ResponseContract => ({
  description,
  headers: REQUEST_ID,
  ...r,
});

/** The Idempotency-Key request header of the generation routes (./idempotency.ts). */
export const idempotencyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/)
    .optional()
    .describe(
      'Makes the call safe to retry: the same key and the same request within IDEMPOTENCY_WINDOW_SECONDS (24 h by default) ' +
        'answer the recorded reply again (streamed again if streamed), with Idempotent-Replayed: true, and are billed once. ' +
        'A key used with another request: 422; while the first call runs: 409 with Retry-After. 1 to 255 visible ASCII characters (a uuid).',
    ),
});
