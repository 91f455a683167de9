import { ResponseContract } from '../../platform/http/contract';
import { openAiErrorBody } from './response-schemas';

/** The answers the inference area's contracts share: headers, and failures by status. */

export const REQUEST_ID = { 'x-request-id': "This request's id: the requestId of its events and of the playground's cost lookup" };
export const RETRY = { 'Retry-After': 'Seconds to wait before retrying' };

export const failures = (openAi: boolean, statuses: Record<number, string>): Record<number, ResponseContract> =>
  Object.fromEntries(
    Object.entries(statuses).map(([status, description]) => [
      Number(status),
      {
        description,
        ...(openAi ? { schema: openAiErrorBody } : {}),
        ...(status === '429' || status === '503' ? { headers: { ...REQUEST_ID, ...RETRY } } : { headers: REQUEST_ID }),
      },
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
  422: 'A field breaks the contract',
  429: "The key's rate limit (requests per minute) is reached",
  502: 'The model upstream failed before any text was sent',
  503: 'The event store, Redis or the read models are unavailable; nothing is billed',
};

export const ok = (description: string, r: Omit<ResponseContract, 'description'>): ResponseContract => ({ description, headers: REQUEST_ID, ...r });

