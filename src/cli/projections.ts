import { Command } from 'commander';
import type { ProjectionStatus } from '../platform/projections/status';
import type { Module, Services } from '../services';
import { fail, withServices } from './context';

const COLUMNS: Array<[keyof ProjectionStatus, string]> = [
  ['name', 'NAME'],
  ['gen', 'GEN'],
  ['checkpoint', 'CHECKPOINT'],
  ['head', 'HEAD'],
  ['lag', 'LAG'],
];

/** A plain aligned table: greppable, no box drawing. */
export function formatStatus(rows: ProjectionStatus[]): string {
  const cells = [COLUMNS.map(([, h]) => h), ...rows.map((r) => COLUMNS.map(([k]) => String(r[k])))];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  return cells.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
}

/* eslint-disable @typescript-eslint/no-require-imports -- lazy requires, as said below */
// Required when a command runs, so `tollgate --help` loads no area.
function projectionsOf(s: Services, modules: Module[] | undefined) {
  const all = modules ?? (require('../modules') as typeof import('../modules')).modules;
  return (require('../services') as typeof import('../services')).projectionsOf(s, all);
}
/* eslint-enable @typescript-eslint/no-require-imports */

export function projectionsCommand(modules?: Module[]): Command {
  const cmd = new Command('projections').description('inspect and rebuild the Redis read models');

  cmd
    .command('status')
    .description('name, generation, checkpoint, head and lag of every projection')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) =>
      withServices(async (s) => {
        const names = projectionsOf(s, modules).map((p) => p.name);
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: only this command loads the status reader
        const { projectionStatus } = require('../platform/projections/status') as typeof import('../platform/projections/status');
        const rows = await projectionStatus(s.store, s.redis, s.ks, names, s.config.PROJECTION_PARTITIONS);
        if (o.json) return void process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
        if (rows.length === 0) {
          const head = await s.store.headPosition();
          return void process.stdout.write(`no projections registered (event store head ${head})\n`);
        }
        process.stdout.write(formatStatus(rows));
      }),
    );

  cmd
    .command('rebuild <name>')
    .description('replay every event into a fresh generation, then switch readers over to it')
    .option('--batch-size <n>', 'events per Redis round trip', '5000')
    .action((name: string, o: { batchSize: string }) =>
      withServices(async (s) => {
        const all = projectionsOf(s, modules);
        const projection = all.find((p) => p.name === name);
        if (!projection) fail(`unknown projection "${name}"; known: ${all.map((p) => p.name).join(', ') || 'none'}`);
        const batchSize = Number(o.batchSize);
        if (!Number.isInteger(batchSize) || batchSize < 1) fail(`--batch-size must be a positive whole number, got "${o.batchSize}"`);
        /* eslint-disable @typescript-eslint/no-require-imports -- lazy: only a rebuild loads these */
        const { SingleBar } = require('cli-progress') as typeof import('cli-progress');
        const { rebuildProjection } = require('../platform/projections/rebuild') as typeof import('../platform/projections/rebuild');
        /* eslint-enable @typescript-eslint/no-require-imports */
        const head = await s.store.headPosition();
        // Progress is measured along the positions from just before the first event: PostgreSQL's
        // (base + xid << 16 + index) and EventStoreDB's (byte offsets) do not start near 0, so a bar
        // from 0 would open at a large percentage.
        const first = (await s.store.readAll({ maxCount: 1 }))[0]?.position ?? 1n;
        const along = (p: bigint) => Number(p - first + 1n);
        const bar = new SingleBar({
          format: `${name} [{bar}] {percentage}% | {value}/{total} positions | {eta_formatted} left`,
          stream: process.stderr,
          noTTYOutput: true,
          notTTYSchedule: 2000,
          etaBuffer: 50,
        });
        // Nothing to replay, nothing to show.
        if (head > 0n) bar.start(along(head), 0);
        try {
          const result = await rebuildProjection({
            store: s.store,
            redis: s.redis,
            ks: s.ks,
            projection,
            batchSize,
            partitions: s.config.PROJECTION_PARTITIONS,
            onProgress: (_applied, h, position) => {
              if (!bar.isActive) bar.start(along(h), 0);
              bar.setTotal(along(h));
              bar.update(along(position));
            },
          });
          bar.update(bar.getTotal());
          bar.stop();
          const rate = result.ms > 0 ? Math.round((result.events * 1000) / result.ms) : result.events;
          process.stdout.write(
            `rebuilt ${name}: ${result.events} events in ${result.ms} ms (${rate} events/s), now generation ${result.gen}\n`,
          );
        } catch (err) {
          bar.stop();
          throw err;
        }
      }),
    );
  return cmd;
}
