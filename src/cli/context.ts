/* eslint-disable @typescript-eslint/no-require-imports -- lazy requires: `tollgate --help` loads no service (below) */
import type { Config } from '../platform/config';
import type { EventStore } from '../platform/eventstore/port';
import type { Services } from '../services';

// The services, the event store and the logger are required when a command runs, not when the CLI
// starts: `tollgate --help` (and a mistyped command) then answers at once instead of loading every
// area first (1.6 s of requires on a loaded machine).
const configModule = () => require('../platform/config') as typeof import('../platform/config');
const describeStartupError = (err: unknown, c?: Config): string =>
  (require('../platform/startup-error') as typeof import('../platform/startup-error')).describeStartupError(err, c);

function config(): Config {
  try {
    return configModule().loadConfig();
  } catch (err) {
    fail(describeStartupError(err));
  }
}

/** Services for a one-shot command; failures print one line and exit non-zero. */
export async function withServices<T>(fn: (s: Services) => Promise<T>): Promise<T> {
  const c = config();
  let s: Services;
  try {
    const { buildServices } = require('../init') as typeof import('../init');
    const { createLogger } = require('../platform/log') as typeof import('../platform/log');
    s = await buildServices(c, createLogger(c.LOG_LEVEL === 'info' ? 'warn' : c.LOG_LEVEL));
  } catch (err) {
    fail(describeStartupError(err, c));
  }
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

/** Only the event store and its keys (reading events needs no Redis); failures print one line and exit non-zero. */
export async function withStore<T>(fn: (store: EventStore) => Promise<T>): Promise<T> {
  const c = config();
  let store: EventStore;
  try {
    // Through the seal, so `events read` shows personal fields and secrets opened, or erased.
    const sealed = (require('../init') as typeof import('../init')).openProtectedStore(c, (line) =>
      process.stderr.write(line + '\n'),
    ).store;
    store = sealed;
    await store.ping();
    await sealed.keys.checkMasterKey();
  } catch (err) {
    fail(describeStartupError(err, c));
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

export function fail(message: string): never {
  process.stderr.write((require('../platform/startup-error') as typeof import('../platform/startup-error')).startupFailureText(message));
  process.exit(1);
}
