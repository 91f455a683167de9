/**
 * What other areas (and the CLI, the portal) may use of billing; its events are in ./events.ts.
 * Nothing here loads the HTTP side. Inference reserves and debits through `Reservations`; accounts
 * asks `funding` whether a workspace may create keys.
 */
export { billingDecider } from './decide';
export { fold } from './evolve';
export type { BillingState } from './state';
export { funding } from './funding';
export { LedgerReplay, type MoneyEvent, type MoneyLine, type WorkspaceTotals } from './ledger';
export { BALANCES, balancesProjection } from './projections/balances/projection';
export { keyHolds, keySpend } from './projections/balances/key-spend';
export { Reservations, type ReserveResult } from './projections/balances/reservations';
export { LEDGER } from './projections/ledger/projection';
export type { PaymentGateway } from './payments/port';
export { TEST_CARDS } from './payments/test-cards';
