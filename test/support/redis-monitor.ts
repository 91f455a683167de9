import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL, testRedisAddress } from './redis';
import { disconnectRedis } from '../../src/platform/redis';

/**
 * The commands the Redis server ran while `fn` ran, those of them that name something under `prefix`
 * (a test's own keys), a script's own commands included: MONITOR lists each command a script runs
 * (source "lua") after the EVAL/EVALSHA that ran it. What a cut in the number of commands per request
 * is checked with, on the real server whatever else runs on it. Each entry is the command's name,
 * lower-cased, then MONITOR's line. MONITOR is spoken on a socket of its own (its lines are RESP simple
 * strings): an ioredis client in monitor mode lost its reply order when disconnected mid-stream.
 */
export async function commandsRun(prefix: string, fn: () => Promise<unknown>): Promise<string[][]> {
  const { host, port } = testRedisAddress();
  const socket = connect({ host, port });
  const seen: string[][] = [];
  const end = `${prefix}__monitor-end__`;
  let buffered = '';
  let started: () => void = () => undefined;
  let ended: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (started = resolve));
  const done = new Promise<void>((resolve) => (ended = resolve));
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\r\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 2);
      if (line === '+OK') started();
      else if (line.includes(end)) ended();
      else if (line.includes(prefix)) {
        const name = /\] "([^"]+)"/.exec(line);
        if (name) seen.push([name[1].toLowerCase(), line]);
      }
    }
  });
  // MONITOR shows every db's commands: the prefix alone picks the test's.
  socket.write('MONITOR\r\n');
  await ready;
  const probe = new Redis(TEST_REDIS_URL);
  try {
    await fn();
    // MONITOR's lines come in the order the server ran the commands: this one comes after fn's.
    await probe.exists(end);
    await done;
  } finally {
    disconnectRedis(probe);
    socket.destroy();
  }
  return seen;
}
