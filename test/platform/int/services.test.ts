import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { LoginGuard } from '../../../src/accounts/sessions/login-guard';
import { loadConfig } from '../../../src/platform/config';
import { createLogger } from '../../../src/platform/log';
import { liveChannel } from '../../../src/billing/projections/usage/projection';
import { buildServices } from '../../../src/init';
import type { Services } from '../../../src/services';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

/**
 * One init point: the per-process parts (login guard, live-usage hub) are built once by
 * buildServices and live on Services, not in module-level caches.
 */
const prefix = uniquePrefix();
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-services-'));
let s: Services;
let pub: Redis;

beforeAll(async () => {
  const config = loadConfig({ LOG_LEVEL: 'silent', NODE_ENV: 'test', DATA_DIR: dataDir, REDIS_PREFIX: prefix, REDIS_URL: TEST_REDIS_URL });
  s = await buildServices(config, createLogger('silent'));
  pub = new Redis(TEST_REDIS_URL);
});
afterAll(async () => {
  pub?.disconnect();
  await s?.close();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
  rmSync(dataDir, { recursive: true, force: true });
});

async function until(check: () => boolean | Promise<boolean>, ms = 3000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('buildServices', () => {
  it('builds one login guard for the process', () => {
    expect(s.loginGuard).toBeInstanceOf(LoginGuard);
  });

  it("builds one live-usage hub that connects on its first listener and fans a workspace's channel out", async () => {
    const subscribers = async () => (await pub.pubsub('SHARDCHANNELS', `${prefix}usage-live*`)) as string[];
    expect(await subscribers()).toEqual([]);
    const a: string[] = [];
    const b: string[] = [];
    const c: string[] = [];
    const stopA = await s.liveUsage.listen('ws-1', (m) => a.push(m));
    const stopB = await s.liveUsage.listen('ws-1', (m) => b.push(m));
    const stopC = await s.liveUsage.listen('ws-2', (m) => c.push(m));
    const channel1 = liveChannel((...p) => s.ks.shared(...p), 'ws-1');
    expect((await subscribers()).sort()).toEqual([channel1, liveChannel((...p) => s.ks.shared(...p), 'ws-2')].sort());
    // Three listeners, two channels, one connection.
    const counts = (await pub.pubsub('SHARDNUMSUB', channel1)) as [string, number];
    expect(counts[1]).toBe(1);
    await pub.spublish(channel1, 'debit-1');
    await until(() => a.length === 1 && b.length === 1);
    expect(c).toEqual([]);
    stopA();
    await pub.spublish(channel1, 'debit-2');
    await until(() => b.length === 2);
    expect(a).toEqual(['debit-1']);
    stopB();
    stopC();
    await until(async () => (await subscribers()).length === 0);
  });
});
