/** What other areas (and the portal) may use of inference; its events are in ./events.ts. */
export { MODEL_CONFIGS } from './models';
/** A request's receipt, read from its events (the portal's cost lookup shows it too). */
export { readReceipt } from './usecases/receipts';
export { verifyReceipt, type ReceiptCheck } from './receipt-signature';
export type { Receipt } from './receipt';
