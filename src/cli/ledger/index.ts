export { allEvents } from './all-events';
export { ledgerCommand } from './command';
export { reconcile, type ReconcileDifference, type ReconcileKind, type ReconcileReport } from './reconcile';
export { csvHeader, csvRow, moneyLines, toStatementLine, type StatementLine } from './statement';
export { verifyLedger, type VerifyDifference, type VerifyReport } from './verify';
