import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { Config } from '../../platform/config';
import type { Keyspace } from '../../platform/projections/keyspace';
import type { PaymentGateway } from './port';
import { SandboxGateway } from './sandbox';
import { StripeGateway } from './stripe';

export * from './port';

/** Where the sandbox keeps its payments, inside DATA_DIR. */
export const SANDBOX_PAYMENTS_FILE = 'sandbox-payments.jsonl';

/** Stripe when STRIPE_SECRET_KEY is set; otherwise the sandbox (no network, no money). */
export function createPaymentGateway(
  config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL' | 'STRIPE_MAX_NETWORK_RETRIES' | 'STRIPE_TIMEOUT_MS' | 'DATA_DIR'>,
  redis: Redis,
  ks: Keyspace,
  /** Wraps the gateway, e.g. to count outcomes (src/platform/metrics). */
  observe: (g: PaymentGateway) => PaymentGateway = (g) => g,
): PaymentGateway {
  if (config.STRIPE_SECRET_KEY) {
    return observe(new StripeGateway({
      secretKey: config.STRIPE_SECRET_KEY,
      apiUrl: config.STRIPE_API_URL,
      maxNetworkRetries: config.STRIPE_MAX_NETWORK_RETRIES,
      timeoutMs: config.STRIPE_TIMEOUT_MS,
    }));
  }
  return observe(new SandboxGateway(redis, ks, join(config.DATA_DIR, SANDBOX_PAYMENTS_FILE)));
}

export const gatewayMode = (config: Pick<Config, 'STRIPE_SECRET_KEY'>): 'stripe' | 'sandbox' =>
  config.STRIPE_SECRET_KEY ? 'stripe' : 'sandbox';
