import { Command, CommanderError } from 'commander';
import { serve } from '../main';
import { eventsCommand } from './events';
import { projectionsCommand } from './projections';

const ROLES = ['all', 'api', 'projector', 'worker'];

export function program(): Command {
  const p = new Command('tollgate').description('billing and usage engine for a conversation-completion API');
  p.command('serve')
    .description('run the service (roles: all, api, projector, worker)')
    .option('--role <role>', 'which part to run', 'all')
    .action(async (o: { role: string }) => {
      if (!ROLES.includes(o.role)) {
        process.stderr.write(`tollgate: unknown role "${o.role}"; use one of ${ROLES.join(', ')}\n`);
        process.exit(2);
      }
      await serve({ ROLE: o.role });
    });
  p.addCommand(projectionsCommand());
  p.addCommand(eventsCommand());
  return p;
}

export async function main(argv: string[]): Promise<void> {
  const p = program();
  p.exitOverride();
  try {
    await p.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    process.stderr.write(`tollgate: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv);
