import type { Config } from '../../platform/config';

export * from './port';

/** Where the sandbox keeps its payments, inside DATA_DIR. */
export const SANDBOX_PAYMENTS_FILE = 'sandbox-payments.jsonl';

export const gatewayMode = (config: Pick<Config, 'STRIPE_SECRET_KEY'>): 'stripe' | 'sandbox' =>
  config.STRIPE_SECRET_KEY ? 'stripe' : 'sandbox';
