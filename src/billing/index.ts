/**
 * What other areas (and the CLI, the portal) may use of billing; its events are in ./events.ts.
 * Nothing here loads the HTTP side. Inference holds money through `Reservations`; accounts asks
 * `workspaceFunding` whether a workspace may create keys.
 */
export { fold } from './evolve';
export type { BillingState } from './state';
export { workspaceFunding } from './usecases/workspace-funding';
/** The credit notes of one request: its receipt shows them. */
export { creditNotesOf } from './usecases/credit-notes';
export type { CreditNoteRecord } from './state';
export { LedgerReplay, type MoneyLine, type WorkspaceTotals } from './ledger';
export { BALANCES, balancesProjection } from './projections/balances/projection';
export { keyHolds, keySpend, memberBudgets, type MemberBudgetStatus } from './projections/balances/queries';
export { Reservations } from './projections/balances/reservations';
export { budgetStack, type BudgetLayer } from './projections/balances/budget-stack';
/** The reserve function, for a script that reserves in the same round trip as its own work (`--@include reserve`). */
export { reserveLua } from './projections/balances/reservation-scripts';
export { reservationKeys } from './projections/balances/reservation-keys';
export {
  reserveResultOf,
  type BudgetRefused,
  type ReserveReply,
  type ReserveResult,
  type TightestLeft,
} from './projections/balances/reserve-result';
export { LEDGER } from './projections/ledger/projection';
export { monthlyStatement, monthRange } from './statement';
export type { PaymentGateway } from './payments/port';
export { TEST_CARDS } from './payments/test-cards';
/** Name-based (v5-layout) uuids: the same name always gives the same id. */
export { nameUuid } from './ids';
