import { Command } from 'commander';
import { SingleBar } from 'cli-progress';
import { projectionsOf } from '../main';
import { rebuildProjection } from '../projections/rebuild';
import { projectionStatus } from '../projections/status';
import { fail, withServices } from './context';

export function projectionsCommand(): Command {
  const cmd = new Command('projections').description('inspect and rebuild the Redis read models');

  cmd
    .command('status')
    .description('name, generation, checkpoint, head and lag of every projection')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) =>
      withServices(async (s) => {
        const rows = await projectionStatus(s.store, s.redis, s.ks, projectionsOf(s).map((p) => p.name));
        if (o.json) return void process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
        console.table(rows);
      }),
    );

  cmd
    .command('rebuild <name>')
    .description('replay every event into a fresh generation, then switch readers over to it')
    .action((name: string) =>
      withServices(async (s) => {
        const all = projectionsOf(s);
        const projection = all.find((p) => p.name === name);
        if (!projection) fail(`unknown projection "${name}"; known: ${all.map((p) => p.name).join(', ') || 'none'}`);
        const bar = new SingleBar({
          format: `${name} [{bar}] {percentage}% | {value}/{total} positions | {eta_formatted} left`,
          stream: process.stderr,
          noTTYOutput: true,
          notTTYSchedule: 2000,
        });
        const head = await s.store.headPosition();
        bar.start(Number(head), 0);
        const result = await rebuildProjection({
          store: s.store,
          redis: s.redis,
          ks: s.ks,
          projection,
          onProgress: (_applied, h, position) => {
            bar.setTotal(Number(h));
            bar.update(Number(position));
          },
        });
        bar.stop();
        const rate = result.ms > 0 ? Math.round((result.events * 1000) / result.ms) : result.events;
        process.stdout.write(
          `rebuilt ${name}: ${result.events} events in ${result.ms} ms (${rate} events/s), now generation ${result.gen}\n`,
        );
      }),
    );
  return cmd;
}
