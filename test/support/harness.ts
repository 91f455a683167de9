import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/platform/config';
import { start, Running } from '../../src/main';
import type { Module, Services } from '../../src/services';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from './redis';
import { assertAnswersMatchContract, recordAnswers } from './response-contract';

export interface TestServer {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  services: Services;
  running: Running;
  /** The unique REDIS_PREFIX of this server (`test:<hex>:`). */
  prefix: string;
  /** The temp DATA_DIR holding the SQLite event store. */
  dataDir: string;
  /** Stops the service, deletes the prefix's Redis keys and the temp dir. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Starts the whole service in-process (role `all` unless overridden) on a free port, over a fresh
 * SQLite file in a temp dir and a unique Redis prefix. `overrides` are env settings (strings) and
 * win over the defaults below; `opts.modules` replaces the module list from src/modules.ts.
 * Every answer the server gives is checked against the OpenAPI document when it closes
 * (./response-contract.ts): `close()` fails listing the answers that drifted from their contract.
 */
export async function startTestServer(overrides: Record<string, string> = {}, opts: { modules?: Module[] } = {}): Promise<TestServer> {
  const dataDir = overrides.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const prefix = overrides.REDIS_PREFIX ?? uniquePrefix();
  const redisUrl = overrides.REDIS_URL ?? TEST_REDIS_URL;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
    // Suites play many users from one address at once: the abuse limits stay out of their way
    // unless a test sets them (test/accounts/e2e/login-throttle.test.ts does).
    LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE: '1000000',
    PASSWORD_HASH_QUEUE: '10000',
    INVITATIONS_PER_ADMIN_PER_HOUR: '1000000',
    ...overrides,
    DATA_DIR: dataDir,
    REDIS_PREFIX: prefix,
    REDIS_URL: redisUrl,
  });
  let running: Running;
  try {
    running = await start(config, opts.modules ? { modules: opts.modules } : {});
  } catch (err) {
    await cleanupPrefix(redisUrl, prefix).catch(() => undefined);
    if (!overrides.DATA_DIR) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const port = running.port ?? 0;
  const answers = running.server ? recordAnswers(running.server) : [];
  let closed: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    services: running.services,
    running,
    prefix,
    dataDir,
    close() {
      closed ??= (async () => {
        try {
          await running.close();
        } finally {
          await cleanupPrefix(redisUrl, prefix).catch(() => undefined);
          if (!overrides.DATA_DIR) rmSync(dataDir, { recursive: true, force: true });
        }
        assertAnswersMatchContract(answers);
      })();
      return closed;
    },
  };
}
