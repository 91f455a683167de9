import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Redis, RedisOptions } from 'ioredis';
import type { Queue } from 'bullmq';
import { LoginGuard } from './accounts/sessions/login-guard';
import { SANDBOX_PAYMENTS_FILE, type PaymentGateway } from './billing/payments';
import { SandboxGateway } from './billing/payments/sandbox';
import { StripeGateway } from './billing/payments/stripe';
import { liveChannel } from './billing/projections/usage/projection';
import { LiveUsageHub } from './billing/projections/usage/live-hub';
import { reloadQueue, RELOAD_QUEUE, type ReloadJobData } from './billing/workers/auto-reload/queue';
import { bullPrefix } from './platform/bullmq';
import type { ModelBackend } from './inference/backend';
import { DemoBackend } from './inference/demo/model';
import type { ModelConfig } from './inference/events';
import { OpenAiBackend, type UpstreamTarget } from './inference/openai/backend';
import type { SearchProvider } from './inference/search/port';
import { SearxngSearch } from './inference/search/searxng';
import type { Config } from './platform/config';
import type { EventStore } from './platform/eventstore/port';
import { SqliteEventStore } from './platform/eventstore/sqlite';
import type { Logger } from './platform/log';
import { Metrics } from './platform/metrics/metrics';
import { observeGateway } from './billing/payments/observed';
import { ObservedStore } from './platform/metrics/observed-store';
import { Keyspace } from './platform/projections/keyspace';
import { ReadModels } from './platform/projections/read-models';
import { connectRedis, disconnectRedis, redisTargetOf } from './platform/redis';
import type { Services } from './services';
import { accountsProtectedEvents } from './accounts/protected-events';
import { webhooksProtectedEvents } from './webhooks/protected-events';
import { lookupHasher } from './platform/crypto/lookup-key';
import { WrappedKeyStore, type KeyStore } from './platform/crypto/key-store';
import { resolveMasterKeys, type MasterKeys } from './platform/crypto/master-key';
import { resolveSigningKeys } from './platform/crypto/signing-key';
import { ProtectedStore } from './platform/crypto/protected-store';
import { SqliteKeyRows } from './platform/crypto/sqlite-key-rows';
import { SqlitePlaintextRows } from './platform/crypto/sqlite-plaintext-rows';
import type { PlaintextRows } from './platform/crypto/seal-plaintext';

/**
 * The composition root's half that builds things: every adapter is chosen here from the
 * configuration (event store, payment gateway, model backend, web search, queues, clock and ids)
 * and handed down in Services. No area reads a setting to pick an implementation of a port.
 */

interface EventStoreConfig {
  EVENT_STORE: 'sqlite' | 'esdb' | 'postgres';
  DATA_DIR: string;
  EVENTSTORE_CONNECTION_STRING?: string;
  DATABASE_URL?: string;
}

/**
 * Opens the configured adapter: the embedded SQLite file `${DATA_DIR}/events.sqlite` (default) or
 * EventStoreDB or PostgreSQL. Their clients are loaded only when used. PostgreSQL creates or migrates
 * its schema on first use (ping() at start-up).
 */
export function openEventStore(config: EventStoreConfig): EventStore {
  if (config.EVENT_STORE === 'postgres') {
    if (!config.DATABASE_URL) throw new TypeError('DATABASE_URL is required when EVENT_STORE=postgres');
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: only the configured store's driver is loaded
    const { PostgresEventStore } = require('./platform/eventstore/postgres') as typeof import('./platform/eventstore/postgres');
    return new PostgresEventStore({ connectionString: config.DATABASE_URL });
  }
  if (config.EVENT_STORE === 'esdb') {
    if (!config.EVENTSTORE_CONNECTION_STRING) {
      throw new TypeError('EVENTSTORE_CONNECTION_STRING is required when EVENT_STORE=esdb');
    }
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: only the configured store's driver is loaded
    const { EsdbEventStore } = require('./platform/eventstore/esdb') as typeof import('./platform/eventstore/esdb');
    return new EsdbEventStore({ connectionString: config.EVENTSTORE_CONNECTION_STRING });
  }
  return new SqliteEventStore({ file: join(config.DATA_DIR, 'events.sqlite') });
}

export interface KeyStoreConfig extends EventStoreConfig {
  MASTER_KEY?: string;
  MASTER_KEY_PREVIOUS?: string;
  KEY_STORE_DATABASE_URL?: string;
}

/**
 * The data keys beside the events: a table in the same SQLite file or PostgreSQL database; with
 * EventStoreDB (which has no tables), KEY_STORE_DATABASE_URL's PostgreSQL or `${DATA_DIR}/keys.sqlite`.
 */
export function openKeyStore(config: KeyStoreConfig, master: MasterKeys): KeyStore {
  const pg =
    config.EVENT_STORE === 'postgres' ? config.DATABASE_URL : config.EVENT_STORE === 'esdb' ? config.KEY_STORE_DATABASE_URL : undefined;
  if (pg) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { PostgresKeyRows } = require('./platform/crypto/postgres-key-rows') as typeof import('./platform/crypto/postgres-key-rows');
    return new WrappedKeyStore(new PostgresKeyRows(pg), master);
  }
  const file = join(config.DATA_DIR, config.EVENT_STORE === 'esdb' ? 'keys.sqlite' : 'events.sqlite');
  return new WrappedKeyStore(new SqliteKeyRows(file), master);
}

/** The configured event store behind the seal of personal fields and secrets (src/platform/crypto/protected-store.ts). */
export function openProtectedStore(config: KeyStoreConfig, say: (line: string) => void): { store: ProtectedStore; master: MasterKeys } {
  // The store first: a DATA_DIR that cannot be opened is named by the store's one-line error.
  const inner = openEventStore(config);
  let master: MasterKeys;
  let keys: KeyStore;
  try {
    master = resolveMasterKeys(config, say);
    keys = openKeyStore(config, master);
  } catch (err) {
    void inner.close();
    throw err;
  }
  return { store: new ProtectedStore(inner, keys, [...accountsProtectedEvents, ...webhooksProtectedEvents]), master };
}

/**
 * The events table itself, for `tollgate events seal-plaintext` (src/platform/crypto/seal-plaintext.ts).
 * EventStoreDB never rewrites an event: there the plain text goes only with a copy of the log.
 */
export function openPlaintextRows(config: EventStoreConfig): PlaintextRows {
  if (config.EVENT_STORE === 'esdb') {
    throw new Error('EVENT_STORE=esdb: EventStoreDB cannot rewrite an event in place (docs/SECURITY.md, "Migration of plain-text events")');
  }
  if (config.EVENT_STORE === 'postgres') {
    if (!config.DATABASE_URL) throw new TypeError('DATABASE_URL is required when EVENT_STORE=postgres');
    // Lazy: only the configured store's driver is loaded.
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { PostgresPlaintextRows } =
      require('./platform/crypto/postgres-plaintext-rows') as typeof import('./platform/crypto/postgres-plaintext-rows');
    /* eslint-enable @typescript-eslint/no-require-imports */
    return new PostgresPlaintextRows(config.DATABASE_URL);
  }
  return new SqlitePlaintextRows(join(config.DATA_DIR, 'events.sqlite'));
}

/** Stripe when STRIPE_SECRET_KEY is set; otherwise the sandbox (no network, no money). */
function paymentGatewayOf(
  config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL' | 'STRIPE_MAX_NETWORK_RETRIES' | 'STRIPE_TIMEOUT_MS' | 'DATA_DIR'>,
  redis: Redis,
  ks: Keyspace,
): PaymentGateway {
  if (config.STRIPE_SECRET_KEY) {
    return new StripeGateway({
      secretKey: config.STRIPE_SECRET_KEY,
      apiUrl: config.STRIPE_API_URL,
      maxNetworkRetries: config.STRIPE_MAX_NETWORK_RETRIES,
      timeoutMs: config.STRIPE_TIMEOUT_MS,
    });
  }
  return new SandboxGateway(redis, ks, join(config.DATA_DIR, SANDBOX_PAYMENTS_FILE));
}

/** The model backend the configuration asks for: the demo model (default) or an OpenAI-compatible upstream. */
function modelBackendOf(c: Config): ModelBackend {
  if (c.MODEL_BACKEND === 'demo') return new DemoBackend({ tokenDelayMs: c.DEMO_TOKEN_DELAY_MS });
  const target = (config: ModelConfig, url?: string, model?: string, key?: string): UpstreamTarget => ({
    baseUrl: url ?? c.OPENAI_BASE_URL ?? '',
    model: model ?? config,
    ...((key ?? c.OPENAI_API_KEY) ? { apiKey: key ?? c.OPENAI_API_KEY } : {}),
  });
  return new OpenAiBackend({
    service_3_pi: target('service_3_pi', c.OPENAI_BASE_URL_PI, c.OPENAI_MODEL_PI, c.OPENAI_API_KEY_PI),
    service_3_productivity: target(
      'service_3_productivity',
      c.OPENAI_BASE_URL_PRODUCTIVITY,
      c.OPENAI_MODEL_PRODUCTIVITY,
      c.OPENAI_API_KEY_PRODUCTIVITY,
    ),
  });
}

/** SearXNG when SEARXNG_URL is set; otherwise no web search. */
function searchOf(c: Config): SearchProvider | undefined {
  return c.SEARXNG_URL ? new SearxngSearch(c.SEARXNG_URL, { timeoutMs: c.SEARXNG_TIMEOUT_MS }) : undefined;
}

export async function buildServices(config: Config, log: Logger): Promise<Services> {
  const metrics = new Metrics();
  const { store: sealed, master } = openProtectedStore(config, (line) => log.warn(line));
  const store = new ObservedStore(sealed, metrics);
  let signingKeys;
  try {
    signingKeys = resolveSigningKeys(config, (line) => log.warn(line))!;
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  const extra: Redis[] = [];
  let redis: Redis;
  let lookupHash: Services['lookupHash'];
  try {
    await store.ping();
    // Another store's key stops the start here, in one line, instead of failing every sealed read.
    await sealed.keys.checkMasterKey();
    lookupHash = await lookupHasher(sealed.keys, master);
    redis = await connectRedis(redisTargetOf(config), 'main', {}, config.REDIS_CONNECT_TIMEOUT_MS);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  const ks = new Keyspace(config.REDIS_PREFIX);
  const connect = async (name: string, opts?: RedisOptions) => {
    const r = await connectRedis(redisTargetOf(config), name, opts, config.REDIS_CONNECT_TIMEOUT_MS);
    extra.push(r);
    return r;
  };
  let queue: Promise<Queue<ReloadJobData>> | undefined;
  let model: ModelBackend | undefined;
  const closeSteps: Array<() => void | Promise<void>> = [];
  const services: Services = {
    config,
    log,
    store,
    redis,
    ks,
    readModels: new ReadModels(redis, ks),
    progress: { waitFor: async () => false, waitForReadModels: async () => false },
    metrics,
    storeWrites: store,
    keys: sealed.keys,
    signingKeys,
    lookupHash,
    gateway: observeGateway(paymentGatewayOf(config, redis, ks), metrics),
    model: () => (model ??= modelBackendOf(config)),
    search: searchOf(config),
    reloadQueue() {
      // BullMQ wants maxRetriesPerRequest: null on its connections.
      queue ??= services
        .connectRedis('bullmq-queue', { maxRetriesPerRequest: null })
        .then((r) => reloadQueue({ redis: r, prefix: bullPrefix(config, RELOAD_QUEUE) }));
      return queue;
    },
    now: () => new Date(),
    newId: () => randomUUID(),
    loginGuard: new LoginGuard({ config, redis, ks }),
    liveUsage: new LiveUsageHub(
      () => connect('usage-live'),
      (workspaceId) => liveChannel((...p) => ks.shared(...p), workspaceId),
      redis,
    ),
    connectRedis: connect,
    onClose: (step) => void closeSteps.push(step),
    async close() {
      for (const step of closeSteps.splice(0)) {
        try {
          await step();
        } catch (err) {
          log.error({ err }, 'shutdown step failed');
        }
      }
      // disconnect() on a connection that already closed keeps the process alive ~2 s (ioredis): disconnectRedis does not.
      for (const r of [...extra, redis]) disconnectRedis(r);
      await store.close();
    },
  };
  return services;
}
