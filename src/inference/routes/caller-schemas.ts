import { z } from 'zod';
import { route, RouteContract } from '../../platform/http/contract';
import { memberErrors, wsParams } from '../../accounts/routes';
import { invalidInput } from '../../platform/http/error-bodies';
import { MODEL_CONFIGS } from '../models';
import { CONTEXT_WINDOW_TOKENS } from '../metering';
import { inferenceBodySchema } from './request-schemas';
import { AUTH_FAILURES, failures, ok, RATE_LIMIT, REQUEST_ID } from './answers';
import { PATHS } from './paths';

/**
 * What callers ask besides a completion (docs/INFERENCE.md): the receipt of one request, for the
 * workspace's members and for the key that sent it, and the token count of a body before sending it.
 */

const usd = z
  .string()
  .regex(/^\d+(\.\d{1,9})?$/)
  .describe('USD as an exact decimal string');
const requestIdParam = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, {
    error: 'requestId must be a request id (the x-request-id of an inference answer, a uuid)',
  })
  .describe('The x-request-id of the inference answer, in any case');

export const receiptBody = z
  .object({
    requestId: z.string(),
    workspaceId: z.string(),
    key: z.object({ keyId: z.string(), name: z.string().nullable(), last4: z.string().nullable() }),
    config: z.enum(MODEL_CONFIGS),
    endpoint: z.enum(['inference', 'streaming', 'openai']),
    status: z.enum(['open', 'completed']).describe('`open` while the request runs: the billing fields are null until it completes'),
    maxTokens: z.number().int(),
    webSearch: z.boolean(),
    promptTokens: z
      .number()
      .int()
      .describe('Prompt tokens counted when the request started (persona, system text and search results included)'),
    inputTokens: z.number().int().nullable().describe('Prompt tokens billed'),
    outputTokens: z.number().int().nullable().describe('Output tokens billed'),
    prices: z.object({ inputUsdPerToken: usd, outputUsdPerToken: usd }).nullable().describe('The prices the debit applied'),
    cost: usd.nullable().describe('The TokensDebited amount'),
    hold: z
      .object({ reserved: usd, released: usd.nullable() })
      .describe('The most the call could cost, held before generating; released whole when the debit is applied'),
    finishReason: z
      .enum(['stop', 'length', 'client_disconnected', 'upstream_error', 'abandoned', 'store_unavailable', 'superseded'])
      .nullable(),
    durationMs: z.number().int().nullable(),
    requestedAt: z.string(),
    completedAt: z.string().nullable(),
    debit: z
      .object({
        position: z.string().describe('Global position of the TokensDebited event in the event store (the ledger order)'),
        eventId: z.string(),
        at: z.string().describe('When the TokensDebited was recorded: the month of the statement whose receipts digest counts it'),
      })
      .nullable(),
    creditNotes: z
      .array(z.object({ creditNoteId: z.string(), amount: usd, reason: z.string(), issuedAt: z.string() }))
      .describe('Credit notes operators issued against this request, oldest first (not covered by the signature)'),
    credited: usd.describe('The sum of the credit notes: at most `cost`'),
    signature: z
      .object({
        alg: z.literal('EdDSA'),
        kid: z.string().describe('The id of the signing key in GET /.well-known/jwks.json'),
        value: z.string().describe('Ed25519 signature of the canonical form (docs/INFERENCE.md, "Verifying a receipt"), base64url'),
      })
      .nullable()
      .describe('Null while the request is open'),
  })
  .meta({ id: 'RequestReceipt' });

const jwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().describe('The public key, base64url'),
  kid: z.string().describe('RFC 7638 thumbprint of the key'),
  alg: z.literal('EdDSA'),
  use: z.literal('sig'),
});

export const jwks = route({
  method: 'get',
  path: '/.well-known/jwks.json',
  summary: 'The public keys that sign receipts (JWKS)',
  description:
    'The current receipt signing key first, then every retired key still published, so receipts signed before a rotation verify. Keep a copy to verify receipts offline.',
  tags: ['inference'],
  security: [],
  responses: {
    200: { description: 'The key set', schema: z.object({ keys: z.array(jwk) }).meta({ id: 'ReceiptKeySet' }) },
    405: { description: 'Another method than GET or HEAD' },
  },
});

export const workspaceReceipt = route({
  method: 'get',
  path: '/v1/workspaces/:ws/requests/:requestId',
  summary: "One inference request's receipt (members)",
  description:
    "Read from the request's events: the key, config and endpoint, tokens and prices billed, cost, hold, finish reason, times and ledger position.",
  tags: ['inference'],
  security: ['session'],
  params: wsParams.extend({ requestId: requestIdParam }),
  responses: {
    200: { description: 'The receipt', schema: receiptBody },
    ...memberErrors,
    404: { ...memberErrors[404], description: 'Workspace not found, not a member, or no such request in this workspace' },
    422: invalidInput('The request id is not an id'),
  },
});

export const keyReceipt = route({
  method: 'get',
  path: `${PATHS.inference}/requests/:requestId`,
  summary: "One request's receipt, for the API key that sent it",
  description:
    'The same receipt as GET /v1/workspaces/{ws}/requests/{requestId}, for requests this key sent only. Free and not rate limited.',
  tags: ['inference'],
  security: ['apiKey'],
  params: z.object({ requestId: requestIdParam }),
  responses: {
    200: ok('The receipt', { schema: receiptBody }),
    ...failures(false, { ...AUTH_FAILURES, 404: 'No such request sent by this key', 422: 'The request id is not an id' }),
  },
});

export const tokenCount = z
  .object({
    config: z.enum(MODEL_CONFIGS),
    prompt_tokens: z
      .number()
      .int()
      .nullable()
      .describe(
        'Prompt tokens as they will be billed: the rendered prompt with the persona and system text; null when it is over the window (counting stops there)',
      ),
    max_tokens: z.number().int(),
    context_window: z.literal(CONTEXT_WINDOW_TOKENS),
    fits: z.boolean().describe('prompt_tokens + max_tokens fit in the context window (else inference answers 400)'),
    max_cost: usd
      .nullable()
      .describe('The most the call can cost: what inference would hold (prompt_tokens and max_tokens at the current prices)'),
    web_search: z.boolean().describe('Web search may add results to the prompt at call time (more tokens than counted here)'),
  })
  .meta({ id: 'TokenCount' });

export const countTokens = route({
  method: 'post',
  path: `${PATHS.inference}/tokens`,
  summary: 'Count the tokens of a request before sending it',
  description:
    "The same body as POST /external/api/inference (and the same 422 for a bad one). Free: nothing is held or billed; it counts against the key's rate limit.",
  tags: ['inference'],
  security: ['apiKey'],
  body: inferenceBodySchema,
  bodyRequired: true,
  responses: {
    200: ok('The count', { schema: tokenCount, headers: { ...REQUEST_ID, ...RATE_LIMIT } }),
    ...failures(
      false,
      {
        ...AUTH_FAILURES,
        413: 'Request body too large (over 2 MB)',
        422: 'A field breaks the contract',
        429: "The key's rate limit is reached",
      },
      true,
    ),
  },
});

export const callerRoutes: RouteContract[] = [keyReceipt, countTokens, workspaceReceipt, jwks];
