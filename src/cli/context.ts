import { Config, ConfigError, loadConfig } from '../platform/config';
import type { EventStore } from '../platform/eventstore/port';
import { createLogger } from '../platform/log';
import { buildServices, openEventStore } from '../init';
import type { Services } from '../services';
import { describeStartupError } from '../platform/startup-error';

function config(): Config {
  try {
    return loadConfig();
  } catch (err) {
    fail(describeStartupError(err));
  }
}

/** Services for a one-shot command; failures print one line and exit non-zero. */
export async function withServices<T>(fn: (s: Services) => Promise<T>): Promise<T> {
  const c = config();
  let s: Services;
  try {
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

/** Only the event store (reading events needs no Redis); failures print one line and exit non-zero. */
export async function withStore<T>(fn: (store: EventStore) => Promise<T>): Promise<T> {
  const c = config();
  let store: EventStore;
  try {
    store = openEventStore(c);
    await store.ping();
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
  process.stderr.write(`tollgate: ${message}\n`);
  process.exit(1);
}

export { ConfigError };
