import type { Redis } from 'ioredis';
import type { Config } from '../config';
import type { Keyspace } from '../projections/keyspace';
import type { PaymentGateway } from './port';
import { SandboxGateway } from './sandbox';
import { StripeGateway } from './stripe';

export * from './port';

/** Stripe when STRIPE_SECRET_KEY is set; otherwise the sandbox (no network, no money). */
export function createPaymentGateway(
  config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL' | 'STRIPE_MAX_NETWORK_RETRIES' | 'STRIPE_TIMEOUT_MS'>,
  redis: Redis,
  ks: Keyspace,
): PaymentGateway {
  if (config.STRIPE_SECRET_KEY) {
    return new StripeGateway({
      secretKey: config.STRIPE_SECRET_KEY,
      apiUrl: config.STRIPE_API_URL,
      maxNetworkRetries: config.STRIPE_MAX_NETWORK_RETRIES,
      timeoutMs: config.STRIPE_TIMEOUT_MS,
    });
  }
  return new SandboxGateway(redis, ks);
}

export const gatewayMode = (config: Pick<Config, 'STRIPE_SECRET_KEY'>): 'stripe' | 'sandbox' =>
  config.STRIPE_SECRET_KEY ? 'stripe' : 'sandbox';
