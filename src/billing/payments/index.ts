export * from './port';

/** Where the sandbox keeps its payments, inside DATA_DIR. */
export const SANDBOX_PAYMENTS_FILE = 'sandbox-payments.jsonl';
