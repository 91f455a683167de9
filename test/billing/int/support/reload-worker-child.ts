/**
 * The auto-reload worker as its own process (the worker role's startReloadWorkerFor), for the kill test (reload-kill.test.ts). It boots
 * (imports, config) and waits; the parent drives it over stdin:
 *
 *   start                      start the composition root in the worker role (BullMQ worker running)
 *   arm <step> <reloadId>      stop at <step> of that reload: print "AT <step> <reloadId>" and hang
 *                              until the parent SIGKILLs the process
 *
 * and it answers on stdout: "READY" once booted, "STARTED", "ARMED <reloadId>", "AT …".
 * Configuration comes from the environment (REDIS_PREFIX, DATA_DIR, STRIPE_*), like the service.
 */
import { createInterface } from 'node:readline';
import { loadConfig } from '../../../../src/platform/config';
import { createLogger } from '../../../../src/platform/log';
import { buildServices } from '../../../../src/init';
import { ReloadStep, ReloadWorkerOptions, startReloadWorkerFor } from '../../../../src/billing/workers/auto-reload';

const armed = new Map<string, ReloadStep>();
const say = (line: string) => process.stdout.write(line + '\n');

const options: ReloadWorkerOptions = {
  concurrency: 1,
  lockDurationMs: Number(process.env.KILL_LOCK_MS ?? 800),
  stalledIntervalMs: Number(process.env.KILL_STALLED_MS ?? 300),
  maxStalledCount: 50,
  sweepIntervalMs: 0,
  hooks: {
    async step(step, info) {
      if (info.reloadId && armed.get(info.reloadId) === step) {
        armed.delete(info.reloadId);
        say(`AT ${step} ${info.reloadId}`);
        await new Promise(() => undefined); // hang here until SIGKILL
      }
    },
  },
};

async function run(): Promise<void> {
  // The worker role's auto-reload worker, as src/billing/module.ts starts it (without the
  // HTTP and inference parts, which this process does not need: it boots faster).
  const config = loadConfig({ ROLE: 'worker', LOG_LEVEL: process.env.CHILD_LOG_LEVEL ?? 'silent' });
  const s = await buildServices(config, createLogger(config.LOG_LEVEL, { role: 'worker' }));
  await startReloadWorkerFor(s, options);
}

let started = false;
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [cmd, a, b] = line.trim().split(/\s+/);
  if (cmd === 'arm') {
    armed.set(b, a as ReloadStep);
    say(`ARMED ${b}`);
  } else if (cmd === 'start' && !started) {
    started = true;
    run().then(
      () => say('STARTED'),
      (err) => {
        process.stderr.write(`child failed to start: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  }
});
rl.on('close', () => process.exit(0));
say('READY');
