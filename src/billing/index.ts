/**
 * What other areas (and the CLI, the portal) may use of billing; its events are in ./events.ts.
 * Nothing here loads the HTTP side. Inference holds money through `Reservations`; accounts asks
 * `workspaceFunding` whether a workspace may create keys.
 */
export { fold } from './evolve';
export type { BillingState } from './state';
export { workspaceFunding } from './usecases/funding';
export { LedgerReplay, type MoneyLine, type WorkspaceTotals } from './ledger';
export { BALANCES, balancesProjection } from './projections/balances/projection';
export { keyHolds, keySpend } from './projections/balances/key-spend';
export { Reservations, type ReserveResult } from './projections/balances/reservations';
/** The reservation's Lua pieces, for the inference admission script (one round trip with the key check). */
export {
  RESERVATION_KEYS_LUA,
  RESERVE_FUNCTION,
  type ReserveReply,
  reserveResultOf,
} from './projections/balances/reservations';
export { LEDGER } from './projections/ledger/projection';
export { monthlyStatement, monthRange } from './statement';
export type { PaymentGateway } from './payments/port';
export { TEST_CARDS } from './payments/test-cards';
