/**
 * One replay round of bench:projector, in a process of its own (so its CPU time is the projector's
 * alone): builds the services of the source tree given as ROOT (this tree, or a baseline's), runs
 * the real ProjectionRunner with every projection (or those named in ONLY) from position 0 into a
 * fresh Redis prefix until it has caught up with the store's head, and prints one JSON line.
 *
 *   ROOT=<tree> EVENT_STORE=sqlite|postgres DATA_DIR=… DATABASE_URL=… REDIS_PREFIX=… [ONLY=a,b] tsx projector-replay.ts
 */
import { join } from 'node:path';

/* eslint-disable @typescript-eslint/no-require-imports -- requires from the tree under test (ROOT), chosen at run time */
async function main() {
  const root = process.env.ROOT!;
  const { loadConfig } = require(join(root, 'src/platform/config')) as typeof import('../../src/platform/config');
  // Where the composition root builds the services: src/init.ts now, src/services.ts in older trees.
  const { existsSync } = require('node:fs') as typeof import('node:fs');
  const initFile = existsSync(join(root, 'src/init.ts')) ? 'src/init' : 'src/services';
  const { buildServices } = require(join(root, initFile)) as typeof import('../../src/init');
  const { projectionsOf } = require(join(root, 'src/main')) as typeof import('../../src/main');
  const { ProjectionRunner } = require(
    join(root, 'src/platform/projections/runner'),
  ) as typeof import('../../src/platform/projections/runner');
  const { createLogger } = require(join(root, 'src/platform/log')) as typeof import('../../src/platform/log');
  const config = loadConfig({ LOG_LEVEL: 'silent', NODE_ENV: 'test' });
  const log = createLogger('silent', {});
  const s = await buildServices(config, log);
  const only = process.env.ONLY ? new Set(process.env.ONLY.split(',')) : null;
  const projections = projectionsOf(s).filter((p) => !only || only.has(p.name));
  const head = await s.store.headPosition();
  const runner = new ProjectionRunner({
    store: s.store,
    redis: await s.connectRedis('projector'),
    ks: s.ks,
    projections,
    batchSize: config.PROJECTION_BATCH_SIZE,
    log,
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await runner.start();
  await runner.caughtUp;
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await runner.stop();
  await s.close();
  // The parent knows how many events it filled; a position is not a count (PostgreSQL's are
  // base + xid << 16 + index), so the head is only the fallback for a store of 1, 2, 3… positions.
  const events = process.env.EVENTS ? Number(process.env.EVENTS) : Number(head);
  process.stdout.write(
    JSON.stringify({
      events,
      ms,
      eventsPerSecond: (events / ms) * 1000,
      cpuUsPerEvent: (cpu.user + cpu.system) / events,
      projections: projections.map((p) => p.name),
    }) + '\n',
  );
  process.exit(0);
}
main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
