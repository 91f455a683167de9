/**
 * The billing use cases: each loads billing-{workspaceId}, asks the domain's decider
 * (src/billing/decide.ts) through handleCommand, talks to the payment gateway on Services,
 * and waits for the projections when the next request must see the write. They throw DomainError
 * and know nothing of HTTP.
 */
export { attachPaymentMethod } from './payment-method';
export { configureAutoReload } from './configure-auto-reload';
export { chargeAutoReload, type ReloadDeps, type ReloadHooks, type ReloadResult, type ReloadStep } from './auto-reload-charge';
export { depositsOf, makeDeposit, type DepositView } from './deposit';
export { workspaceFunding } from './workspace-funding';
export { billingRules } from './configured-rules';
export { settleFromPayment, type SettleVerdict } from './settle-payment';
export { depositReceipt, monthlyStatementOf, type DepositReceipt } from './statements';
export { expireCredit, grantCredit, grantIdFor } from './credit-grants';
export { creditNoteIdFor, creditNotesOf, issueCreditNote } from './credit-notes';
