/**
 * What the portal reads about the session. GET /v1/me's shapes come from the server's schemas (api-types.ts);
 * /portal/config.json's is declared here.
 */
export type { Invitation, Me, Notice, Role, User, Workspace } from './api-types';

export interface PortalConfig {
  /** Whether the request carried a live session (the portal reads /v1/me only then). */
  signedIn?: boolean;
  gateway: 'stripe' | 'sandbox';
  stripePublishableKey: string | null;
  /** Test payment methods the gateway answers by id (the sandbox, or Stripe test mode without Elements). */
  testCards: { paymentMethodId: string; brand: string; last4: string; behaviour: string }[];
  initialDepositUsd: string;
  minDepositUsd: string;
  prices: { inputUsdPerToken: string; outputUsdPerToken: string };
  models: string[];
  /** 'demo': the built-in sampling model answers (canned text, still billed); 'openai': a real model. */
  modelBackend?: 'demo' | 'openai';
  /** Whether a search backend is configured: the playground's "Web search" starts ticked only then. */
  webSearch?: boolean;
}
