import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from './redis';

/**
 * The commands the Redis server ran while `fn` ran, those of them that name something under `prefix`
 * (a test's own keys), a script's own commands included: MONITOR lists each command a script runs
 * (source "lua") after the EVAL/EVALSHA that ran it. What a cut in the number of commands per request
 * is checked with, on the real server whatever else runs on it. Each entry is the command's
 * arguments, the command name lower-cased.
 */
export async function commandsRun(prefix: string, fn: () => Promise<unknown>): Promise<string[][]> {
  const probe = new Redis(TEST_REDIS_URL);
  const monitor = await probe.monitor();
  const seen: string[][] = [];
  const end = `${prefix}__monitor-end__`;
  let ended: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (ended = resolve));
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (!args.some((a) => a.includes(prefix))) return;
    if (args[1] === end) return ended();
    seen.push([args[0].toLowerCase(), ...args.slice(1)]);
  });
  try {
    await fn();
    // MONITOR's lines come in the order the server ran the commands: this one comes after fn's.
    await probe.exists(end);
    await done;
  } finally {
    probe.disconnect();
    await new Promise((closed) => {
      monitor.once('end', closed);
      monitor.disconnect();
    });
  }
  return seen;
}
