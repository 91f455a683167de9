import { z } from 'zod';
import { MODEL_CONFIGS } from '../inference';
import { route, RouteContract } from '../platform/http/contract';
import { transportErrors } from '../platform/http/error-bodies';

/**
 * The portal's two JSON routes. Its static files (/assets/*, top-level files) and the single-page
 * app's fallback (index.html for any other page path) are not API routes and are not in the
 * OpenAPI document.
 */

const usd = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/)
  .describe('USD as a decimal string');

export const portalConfig = route({
  method: 'get',
  path: '/portal/config.json',
  summary: 'What the portal needs to know: payment gateway, Stripe key, prices, limits, models',
  description: 'Public, cached briefly. The Stripe key is the publishable one.',
  tags: ['portal'],
  security: [],
  responses: {
    200: {
      description: 'The configuration',
      schema: z
        .object({
          signedIn: z.boolean().describe('Whether the request carries a live session: the portal reads GET /v1/me only then'),
          gateway: z.enum(['stripe', 'sandbox']),
          stripePublishableKey: z.string().nullable(),
          testCards: z.array(z.object({ paymentMethodId: z.string(), brand: z.string(), last4: z.string(), behaviour: z.string() })),
          initialDepositUsd: usd,
          minDepositUsd: usd,
          prices: z.object({ inputUsdPerToken: usd, outputUsdPerToken: usd }),
          rateLimitPerMinute: z.number().int(),
          models: z.array(z.enum(MODEL_CONFIGS)),
          modelBackend: z.string(),
          webSearch: z
            .boolean()
            .describe('Whether a search backend (SEARXNG_URL) is configured: the playground ticks "Web search" only then'),
        })
        .meta({ id: 'PortalConfig' }),
    },
    ...transportErrors,
  },
});

export const requestCost = route({
  method: 'get',
  path: '/portal/workspaces/:ws/requests/:requestId',
  summary: 'One inference request\'s tokens and cost (the playground\'s "this call cost")',
  description: 'Waits up to 3 s for the debit of a known request that is not billed yet.',
  tags: ['portal'],
  security: ['session'],
  params: z.object({ ws: z.string(), requestId: z.string().describe('The x-request-id of the inference answer') }),
  responses: {
    200: {
      description: 'The request as billed',
      schema: z
        .object({
          requestId: z.string(),
          config: z.enum(MODEL_CONFIGS),
          keyId: z.string(),
          inputTokens: z.number().int(),
          outputTokens: z.number().int(),
          cost: usd,
          inputPriceUsdPerToken: usd,
          outputPriceUsdPerToken: usd,
        })
        .meta({ id: 'RequestCost' }),
    },
    401: { description: 'Not logged in' },
    404: { description: 'No such workspace for this user, no such request in it, or not billed within 3 s' },
    429: { description: 'Too many lookups waiting at once for this user' },
  },
});

export const routes: RouteContract[] = [portalConfig, requestCost];
