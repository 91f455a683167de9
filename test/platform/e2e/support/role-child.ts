/**
 * One tollgate role in a process of its own, for the split-roles test: the settings come from the
 * environment (ROLE, EVENT_STORE, DATABASE_URL, REDIS_PREFIX, …) exactly as `tollgate serve` reads
 * them. Prints "ready <port>" once started (port: api role only); SIGTERM stops it cleanly.
 */
import { loadConfig } from '../../../../src/platform/config';
import { describeStartupError, start } from '../../../../src/main';

async function run(): Promise<void> {
  const config = loadConfig();
  const running = await start(config).catch((err: unknown) => {
    process.stderr.write(`role child: ${describeStartupError(err, config)}\n`);
    process.exit(1);
  });
  process.stdout.write(`ready ${running.port ?? '-'}\n`);
  process.once('SIGTERM', () => void running.close().then(() => process.exit(0)));
}

void run();
