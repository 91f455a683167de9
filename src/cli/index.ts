import { Command, CommanderError } from 'commander';
import type { Module } from '../services';
import { eventsCommand } from './events';
import { keysCommand } from './keys';
import { ledgerCommand } from './ledger';
import { projectionsCommand } from './projections';
import { receiptsCommand } from './receipts';

const ROLES = ['all', 'api', 'projector', 'worker'];

export interface CliOptions {
  /** The feature modules whose projections the CLI knows (default: src/modules.ts). Tests inject fixtures. */
  modules?: Module[];
}

export function program(opts: CliOptions = {}): Command {
  const modules = opts.modules; // undefined: src/modules.ts, loaded only by commands that need it
  const p = new Command('tollgate').description('billing and usage engine for a conversation-completion API');
  p.command('serve')
    .description('run the service: all (default), api, projector or worker')
    .option('--role <role>', 'which part to run: all, api, projector, worker (default: ROLE, else all)')
    .action(async (o: { role?: string }) => {
      if (o.role !== undefined && !ROLES.includes(o.role)) {
        process.stderr.write(`tollgate: unknown role "${o.role}" for --role; use one of ${ROLES.join(', ')}\n`);
        process.exit(2);
      }
      // Required here, not at the top: the other commands never load the api.
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: only `serve` loads the api
      const { serve } = require('../main') as typeof import('../main');
      await serve(o.role !== undefined ? { ROLE: o.role } : {}, { modules });
    });
  p.addCommand(projectionsCommand(modules));
  p.addCommand(eventsCommand());
  p.addCommand(ledgerCommand());
  p.addCommand(keysCommand());
  p.addCommand(receiptsCommand());
  return p;
}

let pipeWatched = false;

/**
 * A reader that stops early (`tollgate events read … | head -1`) closes the pipe, and the next write
 * fails with EPIPE: that ends the command quietly with 0, as `cat` does. Any other error writing
 * the output is one line and exit 1.
 */
function endQuietlyOnClosedPipe(): void {
  if (pipeWatched) return;
  pipeWatched = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    process.stderr.write(`tollgate: cannot write the output: ${err.message.split('\n')[0]}\n`);
    process.exit(1);
  });
}

export async function main(argv: string[], opts: CliOptions = {}): Promise<void> {
  endQuietlyOnClosedPipe();
  const p = program(opts);
  p.exitOverride();
  try {
    await p.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    const message = (err as Error)?.message ?? String(err);
    process.stderr.write(`tollgate: ${message.split('\n')[0]}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv);
