import { Command } from 'commander';
import { withServices } from '../context';

/* eslint-disable @typescript-eslint/no-require-imports -- lazy requires, as said below */
// Each printer is required when its command runs, so `tollgate --help` loads none of them.
const statement = () => require('./statement') as typeof import('./statement');
const verify = () => require('./verify') as typeof import('./verify');
const reconcile = () => require('./reconcile') as typeof import('./reconcile');
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * Finance tools: `tollgate ledger statement|verify|export|reconcile`. Everything here is replayed
 * from the event store, the source of truth; verify and reconcile compare it with the Redis
 * projections and with the payment gateway.
 */
export function ledgerCommand(): Command {
  const cmd = new Command('ledger').description(
    'finance: statements, verification, export and reconciliation (replayed from the event store)',
  );

  cmd
    .command('statement')
    .description(
      "every money event of a workspace with its running balance; with --month, that month's statement (opening, credits, usage per key and config, closing)",
    )
    .requiredOption('--workspace <id>', 'workspace id')
    .option('--month <YYYY-MM>', 'one UTC calendar month, as GET /v1/workspaces/:ws/statements/:month')
    .option('--json', 'print JSON')
    .action((o: { workspace: string; json?: boolean; month?: string }) => withServices((s) => statement().printStatement(s, o)));

  cmd
    .command('verify')
    .description('replay every billing and inference stream and compare each balance with the projections; exit 1 on any difference')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => withServices((s) => verify().printVerify(s, o)));

  cmd
    .command('export')
    .description('every money event with its running balance, as CSV (or JSON lines)')
    .option('--format <format>', 'csv or jsonl', 'csv')
    .option('--workspace <id>', 'only this workspace')
    .option('--from <iso>', 'lines at or after this time (ISO-8601)')
    .option('--to <iso>', 'lines before this time (ISO-8601)')
    .action((o: { format: string; workspace?: string; from?: string; to?: string }) => withServices((s) => statement().printExport(s, o)));

  cmd
    .command('reconcile')
    .description("compare the ledger's deposits and reloads with the payment gateway's charges; exit 1 on any difference")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => withServices((s) => reconcile().printReconcile(s, o)));
  return cmd;
}
