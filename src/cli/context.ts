import { ConfigError, loadConfig } from '../config';
import { createLogger } from '../log';
import { describeStartupError } from '../main';
import { buildServices, Services } from '../services';

/** Services for a one-shot command; failures print one line and exit non-zero. */
export async function withServices<T>(fn: (s: Services) => Promise<T>): Promise<T> {
  let s: Services;
  try {
    const config = loadConfig();
    s = await buildServices(config, createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL));
  } catch (err) {
    fail(describeStartupError(err));
  }
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

export function fail(message: string): never {
  process.stderr.write(`tollgate: ${message}\n`);
  process.exit(1);
}

export { ConfigError };
