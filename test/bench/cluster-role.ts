/**
 * One process of bench:cluster (./cluster.bench.ts), configured by the environment as `tollgate
 * serve` is (ROLE, EVENT_STORE, DATABASE_URL, REDIS_PREFIX, PROJECTION_PARTITIONS, METRICS_PORT …),
 * or the instant upstream with BENCH_PART=upstream. Prints one JSON line once started:
 *   { port, metricsPort, projections, secrets? }
 * With BENCH_SEED_KEYS=n (an api process) it first seeds n funded keys, each in a workspace of its
 * own, and lists them so that taking them in turn spreads the load evenly over BENCH_SPREAD
 * partitions (workspace ids are drawn until each partition has its share). It exits on SIGTERM, and when its stdin closes (the
 * bench died without stopping it). BENCH_PART=verify runs `tollgate ledger verify` instead and exits.
 */
import { randomUUID } from 'node:crypto';
import { fnv1a } from '../../src/platform/projections/partitions';
import { loadConfig } from '../../src/platform/config';
import { describeStartupError, projectionsOf, start } from '../../src/main';
import { seedFundedKey } from '../inference/int/support/seed';
import { startOpenAiUpstream } from '../support/openai-upstream/server';

const REPLY = 'Hello! This is the instant benchmark upstream: a fixed reply, no model time at all.';

function exitWithParent(stop: () => Promise<void>): void {
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
  process.once('SIGTERM', () => void stop());
}

async function upstream(): Promise<void> {
  const up = await startOpenAiUpstream(() => ({ chunks: [REPLY] }));
  // It records every request for tests; a bench only needs the answers.
  setInterval(() => (up.requests.length = 0), 1000).unref();
  exitWithParent(async () => {
    await up.close();
    process.exit(0);
  });
  process.stdout.write(`${JSON.stringify({ port: Number(new URL(up.baseUrl).port), metricsPort: 0, projections: [] })}\n`);
}

async function role(): Promise<void> {
  const config = loadConfig();
  const running = await start(config).catch((err: unknown) => {
    process.stderr.write(`cluster role: ${describeStartupError(err, config)}\n`);
    process.exit(1);
  });
  exitWithParent(async () => {
    await running.close().catch(() => undefined);
    process.exit(0);
  });
  const seed = Number(process.env.BENCH_SEED_KEYS ?? 0);
  const spread = Math.max(1, Number(process.env.BENCH_SPREAD ?? 1));
  const secrets: string[] = [];
  for (let i = 0; i < seed; i++) {
    let workspaceId = randomUUID();
    while (fnv1a(workspaceId) % spread !== i % spread) workspaceId = randomUUID();
    secrets.push((await seedFundedKey(running.services, { workspaceId, usd: '1000000', rateLimit: 1_000_000_000 })).secret);
  }
  const projections = projectionsOf(running.services).map((p) => p.name);
  process.stdout.write(`${JSON.stringify({ port: running.port ?? 0, metricsPort: running.metricsPort ?? 0, projections, secrets })}\n`);
}

/** `tollgate ledger verify`, configured by the environment as the processes are (bench:cluster's fault runs). */
async function verify(): Promise<void> {
  const { program } = await import('../../src/cli');
  await program().parseAsync(['node', 'tollgate', 'ledger', 'verify']);
}

void (process.env.BENCH_PART === 'upstream' ? upstream() : process.env.BENCH_PART === 'verify' ? verify() : role());
