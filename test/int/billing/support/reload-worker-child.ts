/**
 * The auto-reload worker as its own process, for the kill test (reload-kill.test.ts). It boots
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
import { billingModuleWith } from '../../../../src/api/billing/module';
import { loadConfig } from '../../../../src/config';
import { start } from '../../../../src/main';
import { modules } from '../../../../src/modules';
import type { ReloadStep } from '../../../../src/workers/auto-reload';

const armed = new Map<string, ReloadStep>();
const say = (line: string) => process.stdout.write(line + '\n');

const worker = billingModuleWith({
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
});

let started = false;
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [cmd, a, b] = line.trim().split(/\s+/);
  if (cmd === 'arm') {
    armed.set(b, a as ReloadStep);
    say(`ARMED ${b}`);
  } else if (cmd === 'start' && !started) {
    started = true;
    const config = loadConfig({ ROLE: 'worker', LOG_LEVEL: process.env.CHILD_LOG_LEVEL ?? 'silent' });
    start(config, { modules: modules.map((m) => (m.name === 'billing' ? worker : m)) }).then(
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
